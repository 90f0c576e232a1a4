/**
 * What a one-piece write costs the machine in file-system calls (bench/README.md, "The 1 MiB write by
 * stage"): the staging folder made once, not on every write; the mode set on the staged file's open
 * handle, not by path; the parents made only when the rename finds them missing; and no removal of a
 * staged name already renamed away. The calls by path are counted through the module the sidecar imports.
 */
import * as real from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, expect, it, vi } from "vitest";
import { CallCancel } from "../tunnel-cancel";
import type { MachineFiles as Files } from "./files";

const counted = vi.hoisted(() => ({ calls: [] as string[] }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs/promises")>();
  const count =
    <A extends unknown[], R>(name: string, fn: (...args: A) => R) =>
    (...args: A): R => {
      counted.calls.push(name);
      return fn(...args);
    };
  return {
    ...fs,
    mkdir: count("mkdir", fs.mkdir),
    chmod: count("chmod", fs.chmod),
    rm: count("rm", fs.rm),
    stat: count("stat", fs.stat),
    open: count("open", fs.open),
    rename: count("rename", fs.rename),
  };
});

let dir: string;
let files: Files;
let MachineFiles: typeof Files;

// The unit tests share one module cache (vitest.config.ts): the sidecar's files module is loaded anew
// here, so that its file-system calls go through the counting module, whichever file loaded it first.
beforeAll(async () => {
  vi.resetModules();
  ({ MachineFiles } = await import("./files"));
});

beforeEach(async () => {
  dir = await real.mkdtemp(join(tmpdir(), "sidecar-files-calls-"));
  files = new MachineFiles(join(dir, "data"), dir);
});
afterEach(async () => {
  files.dispose();
  await real.rm(dir, { recursive: true, force: true });
});

it("a one-piece write over a file: open, stat of the target, rename; the folder made on the first write only", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  const path = join(dir, "f.bin");
  await fs["fs.commit"]({ upload: "first-1", path, offset: 0, bytes: new Uint8Array(100) }, ctx);
  counted.calls = [];
  await fs["fs.commit"]({ upload: "second-2", path, offset: 0, bytes: new Uint8Array(200) }, ctx);
  expect(counted.calls.sort()).toEqual(["open", "rename", "stat"]);
  expect((await real.stat(path)).size).toBe(200);
  expect(await real.readdir(join(dir, "data", "uploads"))).toEqual([]);
});

it("a failed write removes what it staged", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  await real.mkdir(join(dir, "folder"));
  counted.calls = [];
  await expect(fs["fs.commit"]({ upload: "failed-1", path: join(dir, "folder"), offset: 0, bytes: new Uint8Array(10) }, ctx)).rejects.toThrow("is a folder");
  expect(counted.calls).toContain("rm");
  expect(await real.readdir(join(dir, "data", "uploads"))).toEqual([]);
});
