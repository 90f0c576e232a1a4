import { readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // The worker imports its dashboard page as text (esbuild's `text` loader and wrangler's Text rule do
  // the same), so in-process route tests can import the app as it is.
  plugins: [
    {
      name: "html-as-text",
      enforce: "pre",
      load(id) {
        if (id.endsWith(".html")) return `export default ${JSON.stringify(readFileSync(id, "utf8"))};`;
        return null;
      },
    },
  ],
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts", "sidecar/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // Each file starts its own worker (workerd) and sidecar processes; two cores, so two at a time.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
