import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts", "sidecar/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // Each file starts its own worker (workerd) and sidecar processes; two cores, so two at a time.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
