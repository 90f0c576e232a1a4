/**
 * The children's record survives its writer being killed: it is replaced whole (a new file renamed over
 * the old), never truncated and written in place, so a sidecar killed at any instant leaves a record the
 * next one reads and acts on; what the killed one was still writing is cleared away.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { ChildRegistry } from "./orphans";

let dir: string;
/** The killed writer, bundled once: plain `node` starts it in tens of milliseconds, `tsx` in most of a second. */
let writer: { dir: string; file: string };
beforeAll(async () => {
  const bundleDir = await mkdtemp(join(tmpdir(), "sidecar-orphans-writer-"));
  writer = { dir: bundleDir, file: join(bundleDir, "writer.mjs") };
  await build({
    stdin: { contents: WRITER, resolveDir: import.meta.dirname, loader: "ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: writer.file,
    logLevel: "silent",
  });
});
afterAll(async () => {
  await rm(writer.dir, { recursive: true, force: true });
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "sidecar-orphans-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("replaces the record whole at each change, leaving nothing staged", async () => {
  const registry = new ChildRegistry(dir);
  registry.add(process.pid);
  const first = await stat(join(dir, "children.json"));
  registry.remove(process.pid);
  const second = await stat(join(dir, "children.json"));
  expect(second.ino).not.toBe(first.ino); // a new file: an in-place write keeps the inode
  expect(await readdir(dir)).toEqual(["children.json"]);
  expect(JSON.parse(await readFile(join(dir, "children.json"), "utf8"))).toEqual([]);
});

// A writer that changes the record as fast as it can, killed while it does, ten times.
const WRITER = `
import { ChildRegistry } from "./orphans";
const registry = new ChildRegistry(process.argv[2]);
process.stdout.write("ready\\n");
for (;;) { registry.add(process.pid); registry.remove(process.pid); }
`;

it("leaves a readable record, and no staged one after the next start, when its writer is killed mid-write", { timeout: 60_000 }, async () => {
  for (let round = 0; round < 10; round++) {
    const child = spawn(process.execPath, [writer.file, dir], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.once("data", () => resolve());
      child.once("exit", (code) => reject(new Error(`the writer exited (${code}) before it was ready`)));
    });
    await new Promise((resolve) => setTimeout(resolve, 20 + round * 7)); // let it write a while: the kill lands anywhere
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await gone;
    const text = await readFile(join(dir, "children.json"), "utf8");
    expect(() => JSON.parse(text), `round ${round}: ${JSON.stringify(text)}`).not.toThrow();
    new ChildRegistry(dir).reapLeftovers(); // the next sidecar: reads it, clears what was staged
    expect(await readdir(dir)).toEqual(["children.json"]);
  }
});
