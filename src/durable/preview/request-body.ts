/**
 * A previewed request's body on its way to the app: read in pieces of at most PREVIEW_PIECE_BYTES, each
 * sent only when the sidecar's credit allows it (preview-streams.ts).
 *
 * A body arrives in chunks of a few KiB; sent one by one they would cost more than all the rest of an
 * upload (the files' uploads met the same: docs/architecture.md, "Files"). Read as a byte stream, a body
 * of known size fills a whole piece per read (`readAtLeast`, workerd's), and one of unknown size takes what
 * has come so far, up to a piece, so a body written slowly is never held back waiting for more.
 */
import { PREVIEW_PIECE_BYTES } from "@agent-runtime/protocol/preview";
import { byteReader } from "../../lib/byte-reader";

export interface BodyTarget {
  /** Resolves once a piece may go (the sidecar's credit); false when the stream ended meanwhile. */
  ready(): Promise<boolean>;
  piece(bytes: Uint8Array<ArrayBuffer>): void;
  end(): void;
}

export async function sendBody(body: ReadableStream<Uint8Array>, declaredBytes: number | null, to: BodyTarget): Promise<void> {
  const reader = byteReader(body);
  let remaining = declaredBytes;
  for (;;) {
    if (!(await to.ready())) return void (await reader.cancel().catch(() => undefined));
    const view = new Uint8Array(new ArrayBuffer(PREVIEW_PIECE_BYTES));
    const { value, done } = remaining !== null && remaining > 0 ? await reader.readAtLeast(Math.min(view.length, remaining), view) : await reader.read(view);
    if (value?.length) {
      // Read into the plain ArrayBuffer made above (the stream types say "like" for every view).
      to.piece(new Uint8Array(value.buffer as ArrayBuffer, value.byteOffset, value.byteLength));
      if (remaining !== null) remaining -= value.length;
    }
    if (done) return to.end();
  }
}
