/**
 * Files through the tunnel in bounded pieces (docs/architecture.md, "Files"): the worker never holds more
 * than two pieces of a file, whatever its size. A download pulls the next piece only when the client has
 * taken the last; an upload reads the next piece of the body only once the machine has stored the last.
 */
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { LIMITS } from "../protocol/limits";
import { ProblemError } from "../protocol/problems";
import { fromBase64, toBase64 } from "./base64";
import { relay } from "./machine";

/**
 * A file on the machine as a response body. The first piece is read before answering, so a missing file or
 * a folder is a problem (404, 400), not an empty 200; a file that changes while it streams ends the stream
 * with an error, never with a splice of two versions.
 */
export async function fileResponse(c: Context<AppEnv>, path: string): Promise<Response> {
  const first = await relay(c, "fs.read", { path, offset: 0, length: LIMITS.fileChunkBytes });
  const expect = { size: first.size, mtimeMs: first.mtimeMs };
  const firstBytes = fromBase64(first.data);
  let offset = firstBytes.length;
  const pieces = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (firstBytes.length > 0) controller.enqueue(firstBytes);
        if (offset >= expect.size) controller.close();
      },
      async pull(controller) {
        const next = await relay(c, "fs.read", { path, offset, length: LIMITS.fileChunkBytes, expect });
        const bytes = fromBase64(next.data);
        if (bytes.length === 0) throw new ProblemError("conflict", `${first.path} got shorter while it was being read`);
        controller.enqueue(bytes);
        offset += bytes.length;
        if (offset >= expect.size) controller.close();
      },
    },
    { highWaterMark: 1 },
  );
  // A known length lets clients show progress and tell a cut-off download from a finished one.
  const sized = new FixedLengthStream(expect.size);
  c.executionCtx.waitUntil(pieces.pipeTo(sized.writable).catch((err: unknown) => console.error(`download of ${first.path} ended early:`, err)));
  return new Response(sized.readable, {
    status: 200,
    headers: {
      "content-type": "application/octet-stream",
      "content-length": String(expect.size),
      "last-modified": new Date(expect.mtimeMs).toUTCString(),
      "cache-control": "no-store",
    },
  });
}

/**
 * Stage a request body on the machine, piece by piece, and answer the upload's id. Refused (413) as soon as
 * it passes `maxBytes`, before it is all read; on any failure what was staged is dropped on the machine.
 */
export async function stageBody(c: Context<AppEnv>, maxBytes: number = LIMITS.maxFileBytes): Promise<string> {
  const declared = Number(c.req.header("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const upload = crypto.randomUUID();
  let offset = 0;
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  let staged = false;
  const send = async () => {
    const piece = new Uint8Array(heldBytes);
    let at = 0;
    for (const part of held) {
      piece.set(part, at);
      at += part.length;
    }
    held = [];
    heldBytes = 0;
    staged = true;
    await relay(c, "fs.upload", { upload, offset, data: toBase64(piece) });
    offset += piece.length;
  };
  try {
    const reader = c.req.raw.body?.getReader();
    for (;;) {
      const next = reader ? await reader.read().catch(cutOff) : { done: true as const };
      if (next.done) break;
      let rest: Uint8Array = next.value;
      if (offset + heldBytes + rest.length > maxBytes) throw tooLarge(maxBytes);
      while (rest.length > 0) {
        const take = Math.min(rest.length, LIMITS.fileChunkBytes - heldBytes);
        held.push(rest.subarray(0, take));
        heldBytes += take;
        rest = rest.subarray(take);
        if (heldBytes === LIMITS.fileChunkBytes) await send();
      }
    }
    if (heldBytes > 0) await send();
    return upload;
  } catch (err) {
    if (staged) await relay(c, "fs.abort", { upload }).catch(() => undefined);
    throw err;
  }
}

/** The client went away, or its body broke off: nothing to answer, but it must read as such in the logs. */
function cutOff(err: unknown): never {
  throw new ProblemError("invalid_request", `the request body ended before it was complete (${err instanceof Error ? err.message : String(err)})`);
}

function tooLarge(maxBytes: number): ProblemError {
  return new ProblemError("payload_too_large", `files are written up to ${maxBytes} bytes`);
}
