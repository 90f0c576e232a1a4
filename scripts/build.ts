/**
 * Builds what runs: the worker bundle for workerd (dist/), the sidecar and the mock agent for Node
 * (sidecar/dist/, what the sidecar package ships). Miniflare does not bundle; wrangler deploy bundles
 * src/worker.ts itself.
 */
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { create as createTar } from "tar";

const root = fileURLToPath(new URL("..", import.meta.url));
const sidecarPackage = JSON.parse(readFileSync(`${root}/sidecar/package.json`, "utf8")) as { version: string; dependencies: Record<string, string> };

/** What the sidecar loads at run time from node_modules: only its package's dependencies (a native addon). */
export const SIDECAR_EXTERNAL = Object.keys(sidecarPackage.dependencies);

/**
 * The files the worker serves without computing them (the dashboard's, and the sidecar package): wrangler.toml's
 * `[assets] directory`, served by Workers Static Assets, never part of the worker's bundle.
 */
export const STATIC_DIR = `${root}/dist/static`;

/**
 * The dashboard (src/dashboard/client/: Preact views in TypeScript, xterm.js, marked, DOMPurify, and the page,
 * service worker, manifest and icon of src/dashboard/) as static files, which Workers Static Assets serves and
 * compresses (docs/architecture.md, "Static files"). Scripts and the style are named by a content hash.
 * Nothing is loaded from a CDN.
 */
async function buildDashboard(): Promise<Map<string, string>> {
  // ES modules split into chunks: what only one view uses (xterm.js, the diff renderer) is a chunk that view
  // imports when it opens; the script a first visit loads holds the rest. Names carry a content hash.
  const bundle = await build({
    entryPoints: [`${root}/src/dashboard/client/main.tsx`],
    bundle: true,
    write: false,
    format: "esm",
    splitting: true,
    outdir: `${root}/.dashboard-build`,
    entryNames: "dashboard.[hash]",
    chunkNames: "chunk.[hash]",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
  });
  const scripts = bundle.outputFiles.map((file) => ({ name: basename(file.path), body: file.text }));
  const entry = scripts.find((file) => file.name.startsWith("dashboard."))!;
  // The chunks the first script imports statically: the page names them so that the browser fetches them
  // beside it rather than one round trip after it (a phone on a slow network pays ~150 ms per trip).
  const entryOutput = Object.entries(bundle.metafile.outputs).find(([path]) => basename(path) === entry.name)![1];
  const preloads = entryOutput.imports.filter((i) => i.kind === "import-statement").map((i) => `/assets/${basename(i.path)}`);
  const style = [
    readFileSync(`${root}/node_modules/@xterm/xterm/css/xterm.css`, "utf8"),
    readFileSync(`${root}/node_modules/diff2html/bundles/css/diff2html.min.css`, "utf8"),
    readFileSync(`${root}/src/dashboard/client/style.css`, "utf8"),
  ].join("\n");
  const styleName = `dashboard.${createHash("sha256").update(style).digest("hex").slice(0, 12)}.css`;
  const page = readFileSync(`${root}/src/dashboard/index.html`, "utf8")
    .replace("{{SCRIPT}}", `/assets/${entry.name}`)
    .replace("{{STYLE}}", `/assets/${styleName}`)
    .replace("{{PRELOADS}}", preloads.map((href) => `<link rel="modulepreload" href="${href}">`).join("\n"));
  return new Map<string, string>([
    ["index.html", page],
    // At fixed names: a service worker's address is its scope; a manifest and an icon are linked by name.
    ...["sw.js", "manifest.webmanifest", "icon.svg"].map((name) => [name, readFileSync(`${root}/src/dashboard/static/${name}`, "utf8")] as [string, string]),
    ...scripts.map((file) => [`assets/${file.name}`, file.body] as [string, string]),
    [`assets/${styleName}`, style],
  ]);
}

/**
 * Makes `dir` hold exactly `files`, touching only what changed: a runtime already serving the folder keeps
 * serving it while a test or a second build runs (the same sources give the same files, left as they are).
 */
function writeTree(dir: string, files: Map<string, string | Buffer>): void {
  const present = existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: "utf8" }) : [];
  for (const name of present) {
    const path = join(dir, name);
    if (!files.has(name) && statSync(path).isFile()) rmSync(path);
  }
  for (const [name, body] of files) {
    const path = join(dir, name);
    if (existsSync(path) && readFileSync(path).equals(Buffer.from(body))) continue;
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, body);
  }
}

/** The files of the sidecar package (as `npm pack ./sidecar` packs them, under `package/`). */
const SIDECAR_FILES = ["dist/sidecar.js", "dist/mock-agent.js", "README.md", "LICENSE"];

/**
 * The sidecar package as a tarball the worker serves itself (`GET /v1/sidecar/<name>.tgz`, from its static files), so the connect
 * command works from any deployment, before and without any registry publication, and always installs the
 * sidecar of the worker's own version. Made like `npm pack` makes it (its package.json without scripts:
 * nothing runs at install), with fixed times so that the same sources give the same bytes.
 */
async function buildSidecarTarball(): Promise<[string, Buffer]> {
  const stage = mkdtempSync(join(tmpdir(), "sidecar-pack-"));
  try {
    const manifest = JSON.parse(readFileSync(`${root}/sidecar/package.json`, "utf8")) as Record<string, unknown>;
    delete manifest.scripts;
    mkdirSync(join(stage, "package", "dist"), { recursive: true });
    writeFileSync(join(stage, "package", "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    for (const file of SIDECAR_FILES) writeFileSync(join(stage, "package", file), readFileSync(join(root, "sidecar", file)));
    const tarball = join(stage, "sidecar.tgz");
    await createTar({ gzip: true, file: tarball, cwd: stage, portable: true, mtime: new Date(0), noDirRecurse: false }, [
      "package/package.json",
      ...SIDECAR_FILES.map((f) => `package/${f}`),
    ]);
    const name = `agent-runtime-sidecar-${sidecarPackage.version}.tgz`;
    // The worker knows the name (the connect command carries it); the bytes are a static file.
    const module = `// Generated by scripts/build.ts from sidecar/package.json: do not edit.
export const SIDECAR_PACKAGE_NAME = ${JSON.stringify(name)};
`;
    const out = `${root}/src/sidecar-package.generated.ts`;
    if (!existsSync(out) || readFileSync(out, "utf8") !== module) writeFileSync(out, module);
    return [`sidecar/${name}`, readFileSync(tarball)];
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

export async function buildAll(): Promise<void> {
  const dashboard = await buildDashboard();
  await buildSidecar();
  writeTree(STATIC_DIR, new Map<string, string | Buffer>([...dashboard, await buildSidecarTarball()]));
  await build({
    // The worker, and the same worker with its objects' invocations and writes counted (dev/instrumented-worker.ts:
    // for the idle-cost test and the benchmarks, never deployed).
    entryPoints: { worker: `${root}/src/worker.ts`, "instrumented-worker": `${root}/dev/instrumented-worker.ts` },
    outdir: `${root}/dist`,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    sourcemap: true,
    logLevel: "warning",
  });
}

function buildSidecar() {
  return build({
    entryPoints: { sidecar: `${root}/sidecar/cli.ts`, "mock-agent": `${root}/sidecar/mock-agent/main.ts` },
    outdir: `${root}/sidecar/dist`,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // Everything is bundled but the PTY library (a native addon, installed as the package's one dependency).
    external: SIDECAR_EXTERNAL,
    minifySyntax: true,
    minifyWhitespace: true,
    sourcemap: false,
    define: { __SIDECAR_VERSION__: JSON.stringify(sidecarPackage.version) },
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: "warning",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildAll();
  console.log(
    "built dist/static/ (the dashboard, the sidecar package), sidecar/dist/sidecar.js, sidecar/dist/mock-agent.js, src/sidecar-package.generated.ts, dist/worker.js, dist/instrumented-worker.js",
  );
}
