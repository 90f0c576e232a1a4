/**
 * Builds what runs: the worker bundle for workerd, the sidecar and the mock agent for Node.
 * (Miniflare does not bundle; wrangler deploy bundles src/worker.ts itself.)
 */
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const { version } = JSON.parse(readFileSync(`${root}/package.json`, "utf8")) as { version: string };

export async function buildAll(): Promise<void> {
  await Promise.all([
    build({
      entryPoints: [`${root}/src/worker.ts`],
      outfile: `${root}/dist/worker.js`,
      bundle: true,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      conditions: ["workerd", "worker", "browser"],
      mainFields: ["module", "main"],
      external: ["cloudflare:*", "node:*"],
      loader: { ".html": "text" },
      sourcemap: true,
      logLevel: "warning",
    }),
    build({
      entryPoints: { sidecar: `${root}/sidecar/cli.ts`, "mock-agent": `${root}/sidecar/mock-agent/main.ts` },
      outdir: `${root}/dist`,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      // The sidecar keeps its npm dependencies external; the mock agent is one self-contained file (fast start).
      sourcemap: true,
      define: { __SIDECAR_VERSION__: JSON.stringify(version) },
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      logLevel: "warning",
    }),
  ]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildAll();
  console.log("built dist/worker.js, dist/sidecar.js, dist/mock-agent.js");
}
