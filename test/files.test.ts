/**
 * The machine's files through the worker, the tunnel and a real sidecar: bytes in and out in pieces,
 * folders, moves, deletes, tar batches, and every refusal (a clear problem, nothing changed).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";
import { tarArchive } from "./tar-archive";

let rt: Runtime;
let root: string;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
  root = join(rt.dir, "files");
  mkdirSync(root);
});
afterAll(async () => {
  await rt?.dispose();
});

const q = (path: string) => `path=${encodeURIComponent(path)}`;

async function put(path: string, body: BodyInit): Promise<Response> {
  return rt.api(`/v1/fs/file?${q(path)}`, { method: "PUT", headers: { "content-type": "application/octet-stream" }, body });
}

async function expectProblem(res: Response, status: number, code: string): Promise<string> {
  expect(res.status).toBe(status);
  const problem = await problemOf(res);
  expect(errorCode(problem)).toBe(code);
  return problem.detail;
}

/** The sidecar's staging folder: empty whenever no upload is in flight. */
function staged(): string[] {
  const dir = join(rt.dir, "data-local", "uploads");
  return existsSync(dir) ? readdirSync(dir) : [];
}

describe("files", () => {
  it("writes and reads back binary files larger than one piece, byte for byte", async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 12_345);
    const path = join(root, "deep", "er", "blob.bin");
    const written = await put(path, bytes);
    expect(written.status).toBe(200);
    expect(await written.json()).toEqual({ path, bytesWritten: bytes.length });
    expect(readFileSync(path).equals(bytes)).toBe(true);

    const read = await rt.api(`/v1/fs/file?${q(path)}`);
    expect(read.status).toBe(200);
    expect(read.headers.get("content-type")).toBe("application/octet-stream");
    expect(read.headers.get("content-length")).toBe(String(bytes.length));
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);

    const empty = join(root, "empty");
    expect((await put(empty, new Uint8Array())).status).toBe(200);
    const readEmpty = await rt.api(`/v1/fs/file?${q(empty)}`);
    expect(readEmpty.status).toBe(200);
    expect((await readEmpty.arrayBuffer()).byteLength).toBe(0);
    expect(staged()).toEqual([]);
  });

  it("carries a 50 MiB binary file both ways, byte for byte", async () => {
    const bytes = randomBytes(50 * 1024 * 1024);
    const path = join(root, "big.bin");
    const written = await put(path, bytes);
    expect(await written.json()).toEqual({ path, bytesWritten: bytes.length });
    const read = await rt.api(`/v1/fs/file?${q(path)}`);
    expect(read.headers.get("content-length")).toBe(String(bytes.length));
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);
    expect(staged()).toEqual([]);
  });

  it("replaces a file in one step and keeps its mode", async () => {
    const path = join(root, "script.sh");
    writeFileSync(path, "old", { mode: 0o755 });
    expect((await put(path, "#!/bin/sh\necho new\n")).status).toBe(200);
    expect(readFileSync(path, "utf8")).toBe("#!/bin/sh\necho new\n");
    const { statSync } = await import("node:fs");
    expect(statSync(path).mode & 0o777).toBe(0o755);
  });

  it("lists, stats, makes folders, moves and deletes", async () => {
    const dir = join(root, "tree");
    expect(await (await rt.api(`/v1/fs/mkdir?${q(join(dir, "a", "b"))}`, { method: "POST" })).json()).toEqual({ path: join(dir, "a", "b") });
    writeFileSync(join(dir, "z.txt"), "zz");
    const listed = (await (await rt.api(`/v1/fs/entries?${q(dir)}`)).json()) as { name: string; entryType: string; size: number; path: string }[];
    expect(listed.map((e) => [e.name, e.entryType])).toEqual([
      ["a", "directory"],
      ["z.txt", "file"],
    ]);
    expect(listed[1]).toMatchObject({ path: join(dir, "z.txt"), size: 2, modified: expect.any(String) });

    expect(await (await rt.api(`/v1/fs/stat?${q(join(dir, "z.txt"))}`)).json()).toMatchObject({ entryType: "file", size: 2 });
    expect(await (await rt.api(`/v1/fs/stat?${q(dir)}`)).json()).toMatchObject({ entryType: "directory" });

    const move = (body: object) => rt.api("/v1/fs/move", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    writeFileSync(join(dir, "y.txt"), "yy");
    await expectProblem(await move({ from: join(dir, "z.txt"), to: join(dir, "y.txt") }), 409, "conflict");
    expect(readFileSync(join(dir, "y.txt"), "utf8")).toBe("yy");
    expect(await (await move({ from: join(dir, "z.txt"), to: join(dir, "y.txt"), overwrite: true })).json()).toEqual({
      from: join(dir, "z.txt"),
      to: join(dir, "y.txt"),
    });
    expect(readFileSync(join(dir, "y.txt"), "utf8")).toBe("zz");
    await expectProblem(await move({ from: join(dir, "nope"), to: join(dir, "x") }), 404, "not_found");

    await expectProblem(await rt.api(`/v1/fs/entry?${q(join(dir, "a"))}`, { method: "DELETE" }), 409, "conflict");
    expect(existsSync(join(dir, "a", "b"))).toBe(true);
    expect((await rt.api(`/v1/fs/entry?${q(join(dir, "a"))}&recursive=true`, { method: "DELETE" })).status).toBe(200);
    expect(existsSync(join(dir, "a"))).toBe(false);
    expect((await rt.api(`/v1/fs/entry?${q(join(dir, "y.txt"))}`, { method: "DELETE" })).status).toBe(200);
    await expectProblem(await rt.api(`/v1/fs/entry?${q(join(dir, "y.txt"))}`, { method: "DELETE" }), 404, "not_found");
  });

  it("takes relative paths and ~ from the machine's HOME", async () => {
    const entries = await rt.api("/v1/fs/entries");
    expect(entries.status).toBe(200);
    const home = (await (await rt.api(`/v1/fs/stat?${q("~")}`)).json()) as { path: string; entryType: string };
    expect(home.entryType).toBe("directory");
    expect(home.path.startsWith("/")).toBe(true);
  });

  it("answers clear problems for missing files, folders, and malformed paths", async () => {
    await expectProblem(await rt.api(`/v1/fs/file?${q(join(root, "missing"))}`), 404, "not_found");
    await expectProblem(await rt.api(`/v1/fs/file?${q(root)}`), 400, "invalid_request");
    await expectProblem(await rt.api(`/v1/fs/entries?${q(join(root, "script.sh"))}`), 400, "invalid_request");
    expect(await expectProblem(await rt.api(`/v1/fs/stat?path=${encodeURIComponent("/tmp/a\u0000b")}`), 400, "invalid_request")).toMatch(/NUL/);
    expect(await expectProblem(await rt.api(`/v1/fs/stat?${q(`${root}/../etc`)}`), 400, "invalid_request")).toMatch(/'\.\.'/);
    await expectProblem(await rt.api("/v1/fs/stat?path="), 400, "invalid_request");
    await expectProblem(await rt.api("/v1/fs/stat"), 400, "invalid_request");
    await expectProblem(await put(join(root, "script.sh", "below"), "x"), 400, "invalid_request");
    expect(staged()).toEqual([]);
  });

  it("refuses a body over the limit before reading it, and leaves the old file when an upload is cut off", async () => {
    const path = join(root, "keep.txt");
    writeFileSync(path, "original");
    const declared = await rawPut(path, { "content-length": String(300 * 1024 * 1024) }, Buffer.alloc(10));
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).type).toBe("urn:agent-runtime:error:payload_too_large");

    // 2.5 MiB of a body that never ends: the worker stages pieces, then the client goes away.
    await new Promise<void>((resolve) => {
      const url = new URL(`${rt.url}/v1/fs/file?${q(path)}`);
      const req = request(url, { method: "PUT", headers: { authorization: `Bearer ${rt.token}`, "transfer-encoding": "chunked" } });
      req.on("error", () => resolve());
      req.write(randomBytes(2.5 * 1024 * 1024));
      waitFor(async () => staged().length > 0, "a staged piece").then(() => {
        req.destroy();
        resolve();
      });
    });
    await waitFor(async () => staged().length === 0, "the cut-off upload to be dropped");
    expect(readFileSync(path, "utf8")).toBe("original");
  });

  it("refuses a body of one piece that ends before its declared length, and leaves the old file", async () => {
    const path = join(root, "keep-short.txt");
    writeFileSync(path, "original");
    // 100 KiB declared, 10 KiB sent, then the client goes away: nothing may be written in its place.
    await new Promise<void>((resolve) => {
      const req = request(new URL(`${rt.url}/v1/fs/file?${q(path)}`), {
        method: "PUT",
        headers: { authorization: `Bearer ${rt.token}`, "content-length": String(100 * 1024) },
      });
      req.on("error", () => resolve());
      req.on("response", () => resolve());
      req.write(randomBytes(10 * 1024), () => {
        req.destroy();
        resolve();
      });
    });
    expect(readFileSync(path, "utf8")).toBe("original");
    // The next write of the same file goes through whole, and no staged file is left of the cut one.
    const bytes = randomBytes(64 * 1024);
    expect((await put(path, bytes)).status).toBe(200);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(staged()).toEqual([]);
  });

  it("unpacks a tar batch into a folder", async () => {
    const dest = join(root, "batch");
    const tar = tarArchive([
      { name: "src/", type: "5" },
      { name: "src/index.ts", body: "export {};\n" },
      { name: "README.md", body: "# hi\n" },
      { name: "src/link", type: "2", link: "index.ts" },
    ]);
    const res = await rt.api(`/v1/fs/upload-batch?${q(dest)}`, { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { paths: string[]; truncated: boolean };
    expect(body.truncated).toBe(false);
    expect(body.paths).toEqual(expect.arrayContaining([join(dest, "src", "index.ts"), join(dest, "README.md")]));
    expect(readFileSync(join(dest, "src", "index.ts"), "utf8")).toBe("export {};\n");
    expect(readFileSync(join(dest, "src", "link"), "utf8")).toBe("export {};\n");
    expect(staged()).toEqual([]);
  });

  it.each([
    [
      "a ../ entry",
      [
        { name: "ok.txt", body: "ok" },
        { name: "../escaped.txt", body: "x" },
      ],
      /outside the folder/,
    ],
    [
      "an absolute entry",
      [
        { name: "ok.txt", body: "ok" },
        { name: "/tmp/abs.txt", body: "x" },
      ],
      /outside the folder/,
    ],
    [
      "a link out of the folder",
      [
        { name: "ok.txt", body: "ok" },
        { name: "out", type: "2" as const, link: "../../.." },
      ],
      /links to/,
    ],
    [
      "an absolute link",
      [
        { name: "ok.txt", body: "ok" },
        { name: "etc", type: "2" as const, link: "/etc" },
      ],
      /links to/,
    ],
    [
      "a FIFO",
      [
        { name: "ok.txt", body: "ok" },
        { name: "pipe", type: "6" as const },
      ],
      /FIFO/,
    ],
  ])("refuses a tar with %s and writes nothing", async (_what, entries, why) => {
    const dest = join(root, `hostile-${Math.random().toString(36).slice(2)}`);
    const res = await rt.api(`/v1/fs/upload-batch?${q(dest)}`, { method: "POST", headers: { "content-type": "application/x-tar" }, body: tarArchive(entries) });
    expect(await expectProblem(res, 400, "invalid_request")).toMatch(why);
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(join(root, "escaped.txt"))).toBe(false);
    expect(staged()).toEqual([]);
  });

  it("refuses a batch that is not a tar archive", async () => {
    const dest = join(root, "not-tar");
    await expectProblem(await rt.api(`/v1/fs/upload-batch?${q(dest)}`, { method: "POST", body: "hello" }), 415, "unsupported_media_type");
    const garbage = await rt.api(`/v1/fs/upload-batch?${q(dest)}`, {
      method: "POST",
      headers: { "content-type": "application/x-tar" },
      body: randomBytes(2000),
    });
    await expectProblem(garbage, 400, "invalid_request");
    expect(existsSync(dest)).toBe(false);
  });
});

function rawPut(path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(`${rt.url}/v1/fs/file?${q(path)}`), { method: "PUT", headers: { authorization: `Bearer ${rt.token}`, ...headers } }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.write(body);
    // The body is never finished: the answer must come from the declared length alone.
  });
}
