/**
 * The machine's files (docs/architecture.md, "Files"), in the shapes the sandbox-agent SDK sends and reads. Every call goes
 * through the tunnel to the sidecar; file bodies stream in bounded pieces (durable/files/file-transfer.ts).
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { machineStub, settled } from "../http/machine";
import { json } from "../http/openapi";
import { opProblems, relayRoute, withRelayRoutes } from "../http/relay-route";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { byteReader } from "../lib/byte-reader";
import { FRAME_HEADROOM } from "@agent-runtime/protocol/frames";
import {
  FsDeleteQuery,
  FsEntriesQuery,
  FsEntry,
  FsMoveRequest,
  FsPathQuery,
  FsUploadBatchResponse,
  FsWriteResponse,
  MachinePath,
} from "@agent-runtime/protocol/files";

/** The routes whose bodies are files: they stream past the worker's 1 MiB body limit, up to LIMITS.maxFileBytes. */
export const STREAMED_BODY_PATHS = ["/fs/file", "/fs/upload-batch"] as const;

const readFile = apiRoute("get", "/fs/file", {
  summary: `A file's bytes, streamed (up to ${LIMITS.maxFileBytes} bytes)`,
  access: { role: "viewer", machine: true },
  request: { query: FsPathQuery },
  answers: { 200: { description: "the file", content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } } } },
  problems: [...opProblems("fs.read"), "payload_too_large"],
});

const writeFile = apiRoute("put", "/fs/file", {
  summary: `Write a file (parent folders created); the body is its bytes, streamed, up to ${LIMITS.maxFileBytes}. It replaces the old file in one step.`,
  access: { role: "member", machine: true },
  request: {
    query: FsPathQuery,
    body: { required: true, content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } } },
  },
  answers: { 200: json(FsWriteResponse, "written") },
  problems: [...opProblems("fs.commit"), "payload_too_large"],
});

const uploadBatch = apiRoute("post", "/fs/upload-batch", {
  summary:
    "Unpack a tar archive (Content-Type: application/x-tar) into a folder. Every entry is checked first: one leaving the folder (`../`, an absolute path, a link pointing outside) or a device refuses the whole archive, and nothing is written.",
  access: { role: "member", machine: true },
  request: {
    query: z.object({ path: MachinePath.optional().describe("the folder (default: HOME)") }),
    body: { required: true, content: { "application/x-tar": { schema: z.string().meta({ format: "binary" }) } } },
  },
  answers: { 200: json(FsUploadBatchResponse, "unpacked") },
  problems: [...opProblems("fs.unpack"), "payload_too_large", "unsupported_media_type"],
});

export const fileRoutes = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
  relayRoute("get", "/fs/entries", {
    summary: `The entries of a folder, sorted by name (the first ${LIMITS.maxDirEntries}; X-Entries-Truncated: true when there are more)`,
    access: { role: "viewer", machine: true },
    op: "fs.entries",
    query: FsEntriesQuery,
    reply: ({ entries }) => entries,
    headers: ({ truncated }): Record<string, string> => (truncated ? { "X-Entries-Truncated": "true" } : {}),
    answer: { status: 200, schema: z.array(FsEntry), description: "the entries" },
  }),
  relayRoute("delete", "/fs/entry", {
    summary: "Delete a file, a link, or a folder (a folder with content only with recursive=true; 409 otherwise)",
    access: { role: "member", machine: true },
    op: "fs.delete",
    query: FsDeleteQuery,
    answer: { status: 200, description: "deleted" },
  }),
  relayRoute("post", "/fs/mkdir", {
    summary: "Create a folder and its parents (fine if it exists)",
    access: { role: "member", machine: true },
    op: "fs.mkdir",
    query: FsPathQuery,
    answer: { status: 200, description: "created" },
  }),
  relayRoute("post", "/fs/move", {
    summary: "Move or rename (409 when the destination exists, unless overwrite: true)",
    access: { role: "member", machine: true },
    op: "fs.move",
    body: FsMoveRequest,
    args: ({ json: { from, to, overwrite } }) => ({ from, to, overwrite: overwrite ?? false }),
    answer: { status: 200, description: "moved" },
  }),
  relayRoute("get", "/fs/stat", {
    summary: "What a path is: file or folder, size, last change",
    access: { role: "viewer", machine: true },
    op: "fs.stat",
    query: FsPathQuery,
    answer: { status: 200, description: "the path" },
  }),
])
  // The object streams the file itself: the worker passes its Response through (durable/files/file-transfer.ts).
  .openapi(readFile, async function readFileBody(c) {
    return await machineStub(c).readFile(c.req.valid("query").path);
  })
  .openapi(writeFile, async function writeFileBody(c) {
    const declared = declaredLength(c.req.header("content-length"));
    const outcome = await machineStub(c).writeFile(c.req.valid("query").path, await bodyOf(c.req.raw, declared), declared);
    return c.json(settled(outcome), 200);
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
 * It is read after FRAME_HEADROOM free bytes, which cross with it: the object writes its frame's header
 * there and sends the body where it is, not copied after the header (bench/README.md, "The 1 MiB write by
 * stage"). A larger body streams, so that neither the worker nor the object ever holds a whole file.
 */
async function bodyOf(request: Request, declared: number | null): Promise<ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer> | null> {
  if (!request.body || declared === null || declared > LIMITS.fileChunkBytes) return request.body;
  const reader = byteReader(request.body);
  let buffer = new ArrayBuffer(FRAME_HEADROOM + declared);
  let filled = 0;
  try {
    while (filled < declared) {
      const { value, done } = await reader.readAtLeast(declared - filled, new Uint8Array(buffer, FRAME_HEADROOM + filled, declared - filled));
      // The buffer was handed to the stream and comes back as the view's (same memory, new owner).
      if (value) {
        buffer = value.buffer as ArrayBuffer;
        filled += value.byteLength;
      }
      if (done) break;
    }
    // A body longer than it said (a caller inside workerd, where no HTTP framing cuts it) is refused, not cut short.
    if (filled === declared && !(await reader.read(new Uint8Array(1))).done)
      throw new ProblemError("invalid_request", `the request body is longer than its ${declared} bytes`);
  } catch (err) {
    if (err instanceof ProblemError) throw err;
    throw new ProblemError("invalid_request", `the request body ended before it was complete (${err instanceof Error ? err.message : String(err)})`);
  } finally {
    reader.releaseLock();
  }
  if (filled !== declared) throw new ProblemError("invalid_request", `the request body ended after ${filled} of its ${declared} bytes`);
  return new Uint8Array(buffer, FRAME_HEADROOM, declared);
}

function declaredLength(header: string | undefined): number | null {
  const bytes = Number(header ?? Number.NaN);
  return Number.isFinite(bytes) ? bytes : null;
}
