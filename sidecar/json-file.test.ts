/** The sidecar's JSON files read through their schemas: a file of the shape is read, any other refused by name. */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { readInstalled } from "./agents/installer";
import { readJsonFile, readJsonFileSync, UnreadableFile } from "./json-file";
import { ChildRegistry } from "./orphans";

const Place = z.object({ after: z.string(), start: z.string().optional() });

describe("readJsonFile", () => {
  const dir = mkdtempSync(join(tmpdir(), "json-file-"));

  it("reads a file of the shape, a field added since absent", async () => {
    writeFileSync(join(dir, "ok.json"), '{"after":"m1"}');
    expect(await readJsonFile(join(dir, "ok.json"), Place)).toEqual({ after: "m1" });
    expect(readJsonFileSync(join(dir, "ok.json"), Place)).toEqual({ after: "m1" });
  });

  it("refuses a file that is not JSON or not of the shape, naming the file and what does not fit", async () => {
    writeFileSync(join(dir, "torn.json"), '{"after":');
    writeFileSync(join(dir, "other.json"), '{"after":7}');
    await expect(readJsonFile(join(dir, "torn.json"), Place)).rejects.toThrow(UnreadableFile);
    await expect(readJsonFile(join(dir, "torn.json"), Place)).rejects.toThrow(/torn\.json: not JSON/);
    expect(() => readJsonFileSync(join(dir, "other.json"), Place)).toThrow(/other\.json: not of the shape this release reads .*after/);
  });

  it("throws a missing file's own error (ENOENT) for the caller to handle", async () => {
    await expect(readJsonFile(join(dir, "none.json"), Place)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("an installed agent whose current.json is not of the shape reads as nothing installed", async () => {
    const data = mkdtempSync(join(tmpdir(), "installed-"));
    mkdirSync(join(data, "agents", "mock"), { recursive: true });
    const program = join(data, "program");
    writeFileSync(program, "");
    writeFileSync(join(data, "agents", "mock", "current.json"), JSON.stringify({ native: { package: "p", version: "1.0.0", path: program } }));
    expect(await readInstalled(data, "mock")).toEqual({ native: { package: "p", version: "1.0.0", path: program } });
    writeFileSync(join(data, "agents", "mock", "current.json"), JSON.stringify({ native: { package: "p", path: program } }));
    expect(await readInstalled(data, "mock")).toBeNull();
  });

  it("a children file of another shape stops nothing (no pid is killed on a guess)", () => {
    const data = mkdtempSync(join(tmpdir(), "children-"));
    writeFileSync(join(data, "children.json"), JSON.stringify([{ pid: "1", startTime: 5 }]));
    expect(new ChildRegistry(data).reapLeftovers()).toBe(0);
  });
});
