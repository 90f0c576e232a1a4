/**
 * Files through the tunnel in bounded pieces (docs/architecture.md, "Files"), run by the machine's Durable
 * Object: the worker hands it the request body and gets the download's body back, one RPC each, and the
 * object holds a few pieces of a file at most, whatever its size. A download pulls the next piece only
 * when the client has taken the last; an upload reads the next piece of the body while the machine
 * stores the ones before it (two at most on their way). (Pulling pieces from the worker, one RPC per
 * piece, kept every answer alive until the response ended: the object keeps the loop on its side.)
 */
import { problemResponse } from "../../lib/problem-response";
import { byteReader } from "../../lib/byte-reader";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import { LIMITS } from "@agent-runtime/protocol/limits";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";

export type MachineCall = <N extends OpName>(op: N, args: OpArgs<N>) => Promise<Outcome<OpResult<N>>>;

class Failed extends Error {
  constructor(readonly problem: ProblemInit) {
    super(problem.detail);
  }
}

async function must<T>(outcome: Promise<Outcome<T>>): Promise<T> {
  const settled = await outcome;
  if (!settled.ok) throw new Failed(settled.problem);
  return settled.value;
}

/**
 * A file on the machine as a response. The first piece is read before answering, so a missing file or a
 * folder is a problem (404, 400), not an empty 200; a file that changes while it streams ends the stream
 * with an error, never with a splice of two versions.
 */
export async function fileResponse(call: MachineCall, path: string, waitUntil: (work: Promise<unknown>) => void): Promise<Response> {
  const first = await call("fs.read", { path, offset: 0, length: LIMITS.fileChunkBytes });
  if (!first.ok) return problemResponse(first.problem);
  const { size, mtimeMs } = first.value;
  const expect = { size, mtimeMs };
  const firstBytes = first.value.bytes;
  const headers = {
    "content-type": "application/octet-stream",
    "last-modified": new Date(mtimeMs).toUTCString(),
    "cache-control": "no-store",
  };
  // A file of one piece is answered whole: no stream to pump, its length known from the bytes.
  if (firstBytes.length >= size) return new Response(firstBytes, { headers });
  let offset = firstBytes.length;
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (firstBytes.length > 0) controller.enqueue(firstBytes);
        if (offset >= size) controller.close();
      },
      async pull(controller) {
        const next = await must(call("fs.read", { path, offset, length: LIMITS.fileChunkBytes, expect }));
        const bytes = next.bytes;
        if (bytes.length === 0) throw new Failed({ code: "conflict", detail: `${next.path} got shorter while it was being read` });
        controller.enqueue(bytes);
        offset += bytes.length;
        if (offset >= size) controller.close();
      },
    },
    { highWaterMark: 1 },
  );
  // A known length lets clients show progress and tell a cut-off download from a finished one.
  const sized = new FixedLengthStream(size);
  waitUntil(body.pipeTo(sized.writable).catch((err: unknown) => console.error(`download of ${first.value.path} ended early:`, err)));
  return new Response(sized.readable, { headers });
}

/** A request body: a stream, or one the worker read whole (one piece at most: then it is all the last piece). */
export type UploadBody = ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer> | null;

/** A body staged on the machine but for its last piece, which goes with the call that uses the upload. */
export interface StagedBody {
  upload: string;
  /** Where the last piece starts: the bytes staged before it. */
  offset: number;
  /** The last piece (empty for an empty body); a body of one piece is all here and nothing was staged. */
  bytes: Uint8Array<ArrayBuffer>;
}

/**
 * An upload: the body staged, then used by one call that carries its last piece (`fs.commit` over a path,
 * `fs.unpack` into a folder): one call in all for a body of one piece.
 */
export async function upload<R>(
  call: MachineCall,
  body: UploadBody,
  declaredBytes: number | null,
  /** How many pieces may be on their way at once (the sidecar's `uploadWindow`). */
  window: number,
  use: (last: StagedBody) => Promise<Outcome<R>>,
): Promise<Outcome<R>> {
  const staged = await stageBody(call, body, declaredBytes, window);
  return staged.ok ? use(staged.value) : staged;
}

/**
 * Stage a body on the machine, piece by piece, all but its last piece: that one travels with the commit
 * (or the unpack), so a file of one piece is one round trip. Up to `window` pieces are on their way while
 * the next is read (the sidecar stores them in order), so the object holds at most three. Refused (413)
 * as soon as it passes `maxBytes`, before it is all read; on any failure what was staged is dropped on
 * the machine.
 */
async function stageBody(call: MachineCall, body: UploadBody, declaredBytes: number | null, window: number): Promise<Outcome<StagedBody>> {
  const maxBytes = LIMITS.maxFileBytes;
  const size = LIMITS.fileChunkBytes;
  if (declaredBytes !== null && declaredBytes > maxBytes) return { ok: false, problem: tooLarge(maxBytes) };
  const upload = crypto.randomUUID();
  if (body === null) return { ok: true, value: { upload, offset: 0, bytes: new Uint8Array() } };
  if (body instanceof Uint8Array && body.length <= size) return { ok: true, value: { upload, offset: 0, bytes: body } };
  const pieces = piecesOf(body instanceof Uint8Array ? new Blob([body]).stream() : body, size);
  let offset = 0;
  let staged = false;
  const storing: Promise<unknown>[] = [];
  try {
    let piece = await pieces.next();
    for (;;) {
      if (offset + piece.length > maxBytes) throw new Failed(tooLarge(maxBytes));
      if (piece.length < size) break; // the body ended within it: the last piece
      const following = await pieces.next();
      if (following.length === 0) break; // the body ended with it: the last piece
      staged = true;
      if (storing.length >= window) await storing.shift();
      const sent = must(call("fs.upload", { upload, offset, bytes: piece }));
      sent.catch(() => undefined); // its failure is met where it is awaited, not as an unhandled rejection
      storing.push(sent);
      offset += piece.length;
      piece = following;
    }
    await Promise.all(storing);
    return { ok: true, value: { upload, offset, bytes: piece } };
  } catch (err) {
    await pieces.cancel();
    await Promise.allSettled(storing); // a piece still being stored must not land after the abort
    if (staged) await call("fs.abort", { upload });
    if (err instanceof Failed) return { ok: false, problem: err.problem };
    throw err;
  }
}

/** A body as pieces of `size` bytes: each full but the last, which is shorter (empty when the body ends with a full one). */
export interface Pieces {
  next(): Promise<Uint8Array<ArrayBuffer>>;
  cancel(): Promise<void>;
}

/**
 * A request's body arrives in chunks of a few KiB; read one by one, they cost more than all the rest of
 * an upload. Read as a byte stream, each piece is filled by one `readAtLeast` (workerd's), straight into
 * the piece's own buffer. A stream that is not a byte stream is piped through one that is.
 */
export function piecesOf(body: ReadableStream<Uint8Array>, size: number): Pieces {
  const reader = byteReader(body);
  let ended = false;
  return {
    async next() {
      let buffer = new ArrayBuffer(size);
      let filled = 0;
      while (!ended && filled < size) {
        const { value, done } = await reader.readAtLeast(size - filled, new Uint8Array(buffer, filled)).catch(cutOff);
        // The buffer was handed to the stream and comes back as the view's (same memory, new owner).
        if (value) {
          buffer = value.buffer as ArrayBuffer;
          filled += value.byteLength;
        }
        if (done) ended = true;
      }
      return new Uint8Array(buffer, 0, filled);
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

/** The client went away, or its body broke off: nothing to answer, but it must read as such in the logs. */
function cutOff(err: unknown): never {
  throw new Failed({ code: "invalid_request", detail: `the request body ended before it was complete (${err instanceof Error ? err.message : String(err)})` });
}

function tooLarge(maxBytes: number): ProblemInit {
  return { code: "payload_too_large", detail: `files are written up to ${maxBytes} bytes` };
}
