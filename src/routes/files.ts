/**
 * The machine's files (docs/architecture.md, "Files"), in the shapes the sandbox-agent SDK sends and reads. Every call goes
 * through the tunnel to the sidecar; file bodies stream in bounded pieces (durable/files/file-transfer.ts).
 */
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { machineStub, relay, settled } from "../http/machine";
import { errors, json, jsonBody, MACHINE_ERRORS } from "../http/openapi";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { ProblemError } from "@agent-runtime/protocol/problems";
import {
  FsActionResponse,
  FsDeleteQuery,
  FsEntriesQuery,
  FsEntry,
  FsMoveRequest,
  FsMoveResponse,
  FsPathQuery,
  FsStat,
  FsUploadBatchResponse,
  FsWriteResponse,
  MachinePath,
} from "@agent-runtime/protocol/files";

/** The routes whose bodies are files: they stream past the worker's 1 MiB body limit, up to LIMITS.maxFileBytes. */
export const STREAMED_BODY_PATHS = ["/fs/file", "/fs/upload-batch"] as const;

const FS_ERRORS = [...MACHINE_ERRORS, "not_found", "permission_denied"] as const;

const entries = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/fs/entries",
      summary: `The entries of a folder, sorted by name (the first ${LIMITS.maxDirEntries}; X-Entries-Truncated: true when there are more)`,
      request: { query: FsEntriesQuery },
      responses: { 200: json(z.array(FsEntry), "the entries"), ...errors(...FS_ERRORS) },
    },
  ),
);

const readFile = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/fs/file",
      summary: `A file's bytes, streamed (up to ${LIMITS.maxFileBytes} bytes)`,
      request: { query: FsPathQuery },
      responses: {
        200: { description: "the file", content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } } },
        ...errors(...FS_ERRORS, "payload_too_large"),
      },
    },
  ),
);

const writeFile = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "put",
      path: "/fs/file",
      summary: `Write a file (parent folders created); the body is its bytes, streamed, up to ${LIMITS.maxFileBytes}. It replaces the old file in one step.`,
      request: {
        query: FsPathQuery,
        body: { required: true, content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } } },
      },
      responses: { 200: json(FsWriteResponse, "written"), ...errors(...FS_ERRORS, "payload_too_large") },
    },
  ),
);

const remove = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "delete",
      path: "/fs/entry",
      summary: "Delete a file, a link, or a folder (a folder with content only with recursive=true; 409 otherwise)",
      request: { query: FsDeleteQuery },
      responses: { 200: json(FsActionResponse, "deleted"), ...errors(...FS_ERRORS) },
    },
  ),
);

const mkdir = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/fs/mkdir",
      summary: "Create a folder and its parents (fine if it exists)",
      request: { query: FsPathQuery },
      responses: { 200: json(FsActionResponse, "created"), ...errors(...FS_ERRORS) },
    },
  ),
);

const move = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/fs/move",
      summary: "Move or rename (409 when the destination exists, unless overwrite: true)",
      request: { body: jsonBody(FsMoveRequest) },
      responses: { 200: json(FsMoveResponse, "moved"), ...errors(...FS_ERRORS, "unsupported_media_type") },
    },
  ),
);

const statRoute = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/fs/stat",
      summary: "What a path is: file or folder, size, last change",
      request: { query: FsPathQuery },
      responses: { 200: json(FsStat, "the path"), ...errors(...FS_ERRORS) },
    },
  ),
);

const uploadBatch = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/fs/upload-batch",
      summary:
        "Unpack a tar archive (Content-Type: application/x-tar) into a folder. Every entry is checked first: one leaving the folder (`../`, an absolute path, a link pointing outside) or a device refuses the whole archive, and nothing is written.",
      request: {
        query: z.object({ path: MachinePath.optional().describe("the folder (default: HOME)") }),
        body: { required: true, content: { "application/x-tar": { schema: z.string().meta({ format: "binary" }) } } },
      },
      responses: { 200: json(FsUploadBatchResponse, "unpacked"), ...errors(...FS_ERRORS, "payload_too_large", "unsupported_media_type") },
    },
  ),
);

export const fileRoutes = new OpenAPIHono<AppEnv>()
  .openapi(entries, async function listEntries(c) {
    const { entries, truncated } = await relay(c, "fs.entries", c.req.valid("query"));
    return c.json(entries, 200, truncated ? { "X-Entries-Truncated": "true" } : {});
  })
  // The object streams the file itself: the worker passes its Response through (durable/files/file-transfer.ts).
  .openapi(readFile, async function readFileBody(c) {
    return await machineStub(c).readFile(c.req.valid("query").path);
  })
  .openapi(writeFile, async function writeFileBody(c) {
    const declared = declaredLength(c.req.header("content-length"));
    const outcome = await machineStub(c).writeFile(c.req.valid("query").path, await bodyOf(c.req.raw, declared), declared);
    return c.json(settled(outcome), 200);
  })
  .openapi(remove, async function removeEntry(c) {
    const { path, recursive } = c.req.valid("query");
    return c.json(await relay(c, "fs.delete", { path, recursive }), 200);
  })
  .openapi(mkdir, async function makeFolder(c) {
    return c.json(await relay(c, "fs.mkdir", c.req.valid("query")), 200);
  })
  .openapi(move, async function moveEntry(c) {
    const { from, to, overwrite } = c.req.valid("json");
    return c.json(await relay(c, "fs.move", { from, to, overwrite: overwrite ?? false }), 200);
  })
  .openapi(statRoute, async function statEntry(c) {
    return c.json(await relay(c, "fs.stat", c.req.valid("query")), 200);
  })
  .openapi(uploadBatch, async function unpackBatch(c) {
    const type = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
    if (type !== "application/x-tar") throw new ProblemError("unsupported_media_type", "the body must be a tar archive (Content-Type: application/x-tar)");
    const declared = declaredLength(c.req.header("content-length"));
    const outcome = await machineStub(c).unpackArchive(c.req.valid("query").path ?? "~", await bodyOf(c.req.raw, declared), declared);
    return c.json(settled(outcome), 200);
  });

/**
 * A body of one piece crosses to the machine's object whole: handed over as a stream, it would be read
 * across the boundary chunk by chunk (a 1 MiB write took ~1 ms more that way, measured in a quiet loop).
 * A larger body streams, so that neither the worker nor the object ever holds a whole file.
 */
async function bodyOf(request: Request, declared: number | null): Promise<ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer> | null> {
  if (!request.body || declared === null || declared > LIMITS.fileChunkBytes) return request.body;
  return new Uint8Array(await request.arrayBuffer());
}

function declaredLength(header: string | undefined): number | null {
  const bytes = Number(header ?? Number.NaN);
  return Number.isFinite(bytes) ? bytes : null;
}
