/**
 * The sidecar's uploads, its handlers called directly: pieces that arrive while the one before is still
 * being written are written after it, in order; a piece out of order is refused; an abort while pieces
 * are queued leaves nothing staged.
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { CallCancel } from "../tunnel-cancel";
import { MachineFiles } from "./files";

let dir: string;
let files: MachineFiles;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "sidecar-files-"));
  files = new MachineFiles(join(dir, "data"), dir);
});
afterEach(async () => {
  files.dispose();
  await rm(dir, { recursive: true, force: true });
});

const piece = (fill: number, length: number) => new Uint8Array(length).fill(fill);

it("writes pieces that arrive before the one before them is written, in order, and commits them", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  const upload = "u1";
  // Three pieces sent at once, as the machine's object sends them: none waits for the one before.
  const sent = [fs["fs.upload"]({ upload, offset: 0, bytes: piece(1, 1000) }, ctx), fs["fs.upload"]({ upload, offset: 1000, bytes: piece(2, 1000) }, ctx)];
  const committed = fs["fs.commit"]({ upload, path: join(dir, "out.bin"), offset: 2000, bytes: piece(3, 5) }, ctx);
  expect(await Promise.all(sent)).toEqual([{ received: 1000 }, { received: 2000 }]);
  expect(await committed).toEqual({ path: join(dir, "out.bin"), bytesWritten: 2005 });
  expect(Buffer.from(await readFile(join(dir, "out.bin")))).toEqual(Buffer.concat([piece(1, 1000), piece(2, 1000), piece(3, 5)]));
  expect(await readdir(join(dir, "data", "uploads"))).toEqual([]);
});

it("refuses a piece that does not start where the pieces taken so far end", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  const first = fs["fs.upload"]({ upload: "u2", offset: 0, bytes: piece(1, 10) }, ctx);
  await expect(fs["fs.upload"]({ upload: "u2", offset: 20, bytes: piece(1, 10) }, ctx)).rejects.toThrow("is at byte 10, not 20");
  await expect(fs["fs.upload"]({ upload: "u3", offset: 10, bytes: piece(1, 10) }, ctx)).rejects.toThrow("is unknown here");
  await first;
});

it("an abort while pieces are still being written leaves nothing staged", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  const sent = [0, 1, 2].map((i) => fs["fs.upload"]({ upload: "u4", offset: i * 4096, bytes: piece(i, 4096) }, ctx));
  expect(await fs["fs.abort"]({ upload: "u4" }, ctx)).toEqual({ aborted: true });
  await Promise.all(sent);
  expect(await readdir(join(dir, "data", "uploads"))).toEqual([]);
});

it("a write after the staging folder was removed (by hand, or a cleaner) makes it again", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  const path = join(dir, "again.bin");
  expect(await fs["fs.commit"]({ upload: "first-1", path, offset: 0, bytes: piece(1, 10) }, ctx)).toEqual({ path, bytesWritten: 10 });
  // The folder is made once and remembered: gone now, the next write must notice and make it again.
  await rm(join(dir, "data", "uploads"), { recursive: true });
  expect(await fs["fs.commit"]({ upload: "second-2", path, offset: 0, bytes: piece(2, 20) }, ctx)).toEqual({ path, bytesWritten: 20 });
  expect(Buffer.from(await readFile(path))).toEqual(Buffer.from(piece(2, 20)));
  expect(await readdir(join(dir, "data", "uploads"))).toEqual([]);
});

it("a refused commit leaves no staged file: over a folder, or under a file", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  await mkdir(join(dir, "a-folder"));
  await writeFile(join(dir, "a-file"), "x");
  await expect(fs["fs.commit"]({ upload: "folder-1", path: join(dir, "a-folder"), offset: 0, bytes: piece(1, 10) }, ctx)).rejects.toThrow("is a folder");
  await expect(fs["fs.commit"]({ upload: "under-file-1", path: join(dir, "a-file", "x.bin"), offset: 0, bytes: piece(1, 10) }, ctx)).rejects.toThrow(
    "a part of the path is not a folder",
  );
  // Staged in pieces first, then refused at the commit: the pieces go too.
  await fs["fs.upload"]({ upload: "pieces-1", offset: 0, bytes: piece(1, 10) }, ctx);
  await expect(fs["fs.commit"]({ upload: "pieces-1", path: join(dir, "a-folder"), offset: 10, bytes: piece(2, 5) }, ctx)).rejects.toThrow("is a folder");
  expect(await readdir(join(dir, "data", "uploads"))).toEqual([]);
  expect((await stat(join(dir, "a-folder"))).isDirectory()).toBe(true);
  expect(await readFile(join(dir, "a-file"), "utf8")).toBe("x");
});

it("makes the parent folders, keeps the permissions of the file it replaces (not setuid or setgid), and gives a new file 0644", async () => {
  const fs = files.handlers();
  const ctx = new CallCancel();
  const deep = join(dir, "new", "deeper", "file.bin");
  await fs["fs.commit"]({ upload: "deep-1", path: deep, offset: 0, bytes: piece(1, 10) }, ctx);
  expect((await stat(deep)).mode & 0o7777).toBe(0o644);
  const script = join(dir, "run.sh");
  await writeFile(script, "old");
  await chmod(script, 0o750);
  await fs["fs.upload"]({ upload: "script-1", offset: 0, bytes: piece(1, 10) }, ctx);
  await fs["fs.commit"]({ upload: "script-1", path: script, offset: 10, bytes: piece(2, 10) }, ctx);
  expect((await stat(script)).mode & 0o7777).toBe(0o750);
  expect((await readFile(script)).length).toBe(20);
  // A setuid or setgid file written over keeps its permissions, not its privilege.
  await chmod(script, 0o6755);
  await fs["fs.commit"]({ upload: "script-2", path: script, offset: 0, bytes: piece(3, 10) }, ctx);
  expect((await stat(script)).mode & 0o7777).toBe(0o755);
});
