/**
 * The layout's rules, checked by `npm test` (docs/architecture.md, "Layout rules"): no import cycle among
 * the production modules of the worker, the sidecar and the protocol package, type-only imports included
 * (but an object's typed stub: TYPED_STUBS); each object's features reached only through its registry; no production module
 * imports a test module; no production module longer than 400 lines (but any named in OVER_THE_LIMIT,
 * a debt written down while a file is split: a named file back under the limit fails the check until it
 * is taken off the list); every route handler in `src/routes/` named (a stack trace or a reader can
 * say which route it is), never an anonymous arrow; and in `src/durable/`, everything read back from
 * storage parsed through its schema (durable/storage/stored.ts): no `get<T>`, `list<T>` or `exec<T>`
 * naming the type a read is trusted to have, no `JSON.parse(…) as`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
const PRODUCTION_ROOTS = ["src", "sidecar", "packages/protocol/src"];
const MAX_LINES = 400;
/** Files allowed over the limit while they are split, each a written-down debt (none now). */
const OVER_THE_LIMIT = new Set<string>([]);

function isTest(path: string): boolean {
  return /\.test\.tsx?$/.test(path) || path.startsWith("test/") || path.includes("/test/");
}

function productionFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (name === "node_modules" || name === "dist") continue;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...productionFiles(path));
    else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts") && !name.includes(".generated.") && !isTest(path)) out.push(path);
  }
  return out;
}

/** What a module imports, at run time or for its types alone (`typeOnly`): both are edges of the module graph. */
function imports(text: string): { specifier: string; typeOnly: boolean }[] {
  const found: { specifier: string; typeOnly: boolean }[] = [];
  const pattern = /^\s*(import|export)\s+(type\s+)?([^'"]*?\s+from\s+)?["']([^"']+)["']/gm;
  for (const match of text.matchAll(pattern)) found.push({ specifier: match[4]!, typeOnly: match[2] !== undefined });
  for (const match of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) found.push({ specifier: match[1]!, typeOnly: false });
  return found;
}

/**
 * The one kind of type-only edge left out of the cycle check, written down: a Durable Object's typed
 * stub (`DurableObjectNamespace<MachineObject>` in `Env`, `DurableObjectStub<TeamObject>` in stubs.ts)
 * names the object's class, and the objects call each other by RPC, so these types are mutual by nature.
 */
const OBJECT_CLASSES = new Set(["src/durable/machine/machine.ts", "src/durable/team/team.ts", "src/durable/tokens/token.ts"]);
const TYPED_STUBS = new Set(["src/env.ts", "src/durable/stubs.ts"]);

/**
 * The objects' composition roots reach their features only through the registry (machine/features.ts,
 * team/team-features.ts: docs/architecture.md, "Features of an object"): no import of another folder of
 * src/durable/ but the shared storage and streams, and `team.ts` (also its RPC surface, which names its
 * features' types) no run-time one.
 */
const ROOTS: Record<string, { folder: string; typesToo: boolean }> = {
  "src/durable/machine/machine-core.ts": { folder: "src/durable/machine/", typesToo: true },
  "src/durable/machine/sidecar-lifecycle.ts": { folder: "src/durable/machine/", typesToo: true },
  "src/durable/machine/client-sockets.ts": { folder: "src/durable/machine/", typesToo: true },
  "src/durable/team/team.ts": { folder: "src/durable/team/", typesToo: false },
};
const SHARED = ["src/durable/storage/", "src/durable/streams/", "src/durable/stubs.ts"];

/** A specifier as a file of this repository, or null for a package. */
function resolveSpecifier(from: string, specifier: string): string | null {
  let base: string;
  if (specifier.startsWith("@agent-runtime/protocol/")) base = `packages/protocol/src/${specifier.slice("@agent-runtime/protocol/".length)}`;
  else if (specifier.startsWith(".")) base = relative(ROOT, resolve(ROOT, dirname(from), specifier));
  else return null;
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`]) {
    if (existsSync(join(ROOT, candidate)) && statSync(join(ROOT, candidate)).isFile()) return candidate.replace(/\.js$/, ".ts");
  }
  if (base.endsWith(".js") && existsSync(join(ROOT, base.replace(/\.js$/, ".ts")))) return base.replace(/\.js$/, ".ts");
  return null;
}

const problems: string[] = [];
const files = PRODUCTION_ROOTS.flatMap(productionFiles);
const graph = new Map<string, string[]>();
for (const file of files) {
  const text = readFileSync(join(ROOT, file), "utf8");
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  if (lines > MAX_LINES && !OVER_THE_LIMIT.has(file)) problems.push(`${file}: ${lines} lines (at most ${MAX_LINES}): split it by what it does`);
  if (lines <= MAX_LINES && OVER_THE_LIMIT.has(file)) problems.push(`${file}: ${lines} lines now: take it off OVER_THE_LIMIT in scripts/check-architecture.ts`);
  if (file.startsWith("src/routes/")) {
    for (const [index, line] of text.split("\n").entries())
      if (/\.(openapi|get|post|put|patch|delete|all)\([^)]*,\s*(async\s*)?\(c\)\s*=>/.test(line))
        problems.push(`${file}:${index + 1}: a route handler without a name: write it as \`async function whatItDoes(c) { … }\``);
  }
  if (file.startsWith("src/durable/")) {
    for (const [index, line] of text.split("\n").entries()) {
      if (/\.(get|list|exec)<[^>(]+>\s*\(/.test(line))
        problems.push(`${file}:${index + 1}: a stored read typed by a type argument: read it through its schema (durable/storage/stored.ts)`);
      if (/JSON\.parse\([^;]*\)\)?\s+as\s+(?!const\b)/.test(line))
        problems.push(`${file}:${index + 1}: JSON.parse(…) as …: parse it through its schema (durable/storage/stored.ts: jsonText)`);
    }
  }
  const edges: string[] = [];
  for (const { specifier, typeOnly } of imports(text)) {
    const target = resolveSpecifier(file, specifier);
    if (target === null) continue;
    if (isTest(target)) problems.push(`${file} imports the test module ${target}`);
    const root = ROOTS[file];
    if (
      root &&
      (root.typesToo || !typeOnly) &&
      target.startsWith("src/durable/") &&
      !target.startsWith(root.folder) &&
      !SHARED.some((s) => target.startsWith(s))
    )
      problems.push(`${file} imports the feature module ${target}: register the feature (its folder's class) in the object's registry instead`);
    if (typeOnly && TYPED_STUBS.has(file) && OBJECT_CLASSES.has(target)) continue;
    edges.push(target);
  }
  graph.set(file, edges);
}

// Cycles: a depth-first walk that reports each cycle once, by its files in order.
const state = new Map<string, "open" | "done">();
const stack: string[] = [];
const seen = new Set<string>();
function walk(file: string): void {
  state.set(file, "open");
  stack.push(file);
  for (const next of graph.get(file) ?? []) {
    if (state.get(next) === "open") {
      const cycle = stack.slice(stack.indexOf(next));
      const key = [...cycle].sort().join(" ");
      if (!seen.has(key)) {
        seen.add(key);
        problems.push(`import cycle: ${[...cycle, next].join(" -> ")}`);
      }
    } else if (!state.has(next) && graph.has(next)) walk(next);
  }
  stack.pop();
  state.set(file, "done");
}
for (const file of files) if (!state.has(file)) walk(file);

if (problems.length) {
  for (const p of problems) console.error(p);
  console.error(`check-architecture: ${problems.length} problem(s) in ${files.length} production modules`);
  process.exit(1);
}
console.log(
  `check-architecture: ${files.length} production modules, no import cycle (type imports included), every feature through its object's registry, no test import, none over ${MAX_LINES} lines, every route handler named, every stored read parsed${OVER_THE_LIMIT.size ? ` but ${OVER_THE_LIMIT.size} named` : ""}`,
);
