import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { appliedAlready, appliedRecord, ManifestFile } from "./manifest-file";

const Result = z.object({ version: z.string(), count: z.number() });
const Manifest = z.object({ written: z.record(z.string(), z.array(z.string())), applied: appliedRecord(Result) });
type Manifest = z.infer<typeof Manifest>;

async function manifestAt(text?: string) {
  const path = join(await mkdtemp(join(tmpdir(), "manifest-")), "manifest.json");
  if (text !== undefined) await writeFile(path, text);
  return { path, file: new ManifestFile<Manifest>(path, Manifest, () => ({ written: {}, applied: undefined }), 0o600) };
}

describe("ManifestFile", () => {
  it("reads a missing or unreadable file as a fresh start", async () => {
    expect(await (await manifestAt()).file.read()).toEqual({ written: {}, applied: undefined });
    expect(await (await manifestAt("{not json")).file.read()).toEqual({ written: {}, applied: undefined });
    expect(await (await manifestAt('{"written":"nope"}')).file.read()).toEqual({ written: {}, applied: undefined });
  });

  it("keeps what was written when only the applied record is unreadable (another version's): the next apply runs in full", async () => {
    const { file } = await manifestAt(JSON.stringify({ written: { ".claude.json": ["docs"] }, applied: { version: "3", result: "old shape" } }));
    expect(await file.read()).toEqual({ written: { ".claude.json": ["docs"] }, applied: undefined });
  });

  it("writes what it reads back, with its mode", async () => {
    const { path, file } = await manifestAt();
    const manifest: Manifest = { written: { a: ["b"] }, applied: { version: "1", fingerprint: "f", result: { version: "1", count: 2 } } };
    await file.write(manifest);
    expect(await file.read()).toEqual(manifest);
    expect(JSON.parse(await readFile(path, "utf8"))).toEqual(manifest);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });
});

describe("appliedAlready", () => {
  const applied = { version: "2", fingerprint: "targets", result: { version: "2", count: 1 } };

  it("answers the recorded result, marked unchanged, for the same version and fingerprint", () => {
    expect(appliedAlready(applied, "2", "targets", false)).toEqual({ version: "2", count: 1, unchanged: true });
  });

  it("is null for another version, other targets, a forced apply or nothing applied yet", () => {
    expect(appliedAlready(applied, "3", "targets", false)).toBeNull();
    expect(appliedAlready(applied, "2", "other", false)).toBeNull();
    expect(appliedAlready(applied, "2", "targets", true)).toBeNull();
    expect(appliedAlready(undefined, "2", "targets", false)).toBeNull();
  });
});
