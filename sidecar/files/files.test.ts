/**
 * The sidecar's uploads, its handlers called directly: pieces that arrive while the one before is still
 * being written are written after it, in order; a piece out of order is refused; an abort while pieces
 * are queued leaves nothing staged.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
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
