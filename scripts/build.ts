/**
 * Builds what runs: the worker bundle for workerd (dist/), the sidecar and the mock agent for Node
 * (sidecar/dist/, what the sidecar package ships). Miniflare does not bundle; wrangler deploy bundles
 * src/worker.ts itself.
 */
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const sidecarPackage = JSON.parse(readFileSync(`${root}/sidecar/package.json`, "utf8")) as { version: string; dependencies: Record<string, string> };

/** What the sidecar loads at run time from node_modules: only its package's dependencies (a native addon). */
export const SIDECAR_EXTERNAL = Object.keys(sidecarPackage.dependencies);

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
      outdir: `${root}/sidecar/dist`,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      // Everything is bundled but the PTY library (a native addon, installed as the package's one dependency).
      external: SIDECAR_EXTERNAL,
      minifySyntax: true,
      sourcemap: false,
      define: { __SIDECAR_VERSION__: JSON.stringify(sidecarPackage.version) },
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      logLevel: "warning",
    }),
  ]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildAll();
  console.log("built dist/worker.js, sidecar/dist/sidecar.js, sidecar/dist/mock-agent.js");
}
