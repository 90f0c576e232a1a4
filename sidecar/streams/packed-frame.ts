/**
 * A packed `ev` batch as the tunnel carries it, built in one buffer: the same bytes as
 * `encodeFrame(packEvents(...))` (packages/protocol/src/frames.ts: 4 bytes of the control frame's length,
 * big-endian, its JSON, then the events' texts one after another), but each event's text is written once,
 * where it goes, instead of into a piece of its own, then into the joined pieces, then into the frame. A
 * stream's every update crosses here (docs/architecture.md, "Frames"); `packed-frame.test.ts` holds it
 * to the protocol's encoding byte for byte.
 */
import type { OutputPiece, StreamEvent, StreamGap } from "@agent-runtime/protocol/frames";

/** The length of a binary frame's control frame, before it (as `encodeFrame` writes it). */
const HEADER_LENGTH_BYTES = 4;

export function encodePackedEvents(sub: string, events: readonly StreamEvent[], gap?: StreamGap, also?: string[]): Uint8Array {
  const pieces: OutputPiece[] = [];
  let payload = 0;
  for (const [seq, json] of events) {
    const length = Buffer.byteLength(json);
    pieces.push([seq, length]);
    payload += length;
  }
  // The keys in `packEvents`' order, so that the bytes are the same.
  const header = JSON.stringify({ t: "ev", sub, ...(also?.length ? { also } : {}), pieces, ...(gap ? { gap } : {}) });
  const headerLength = Buffer.byteLength(header);
  const out = Buffer.allocUnsafe(HEADER_LENGTH_BYTES + headerLength + payload);
  out.writeUInt32BE(headerLength, 0);
  let at = HEADER_LENGTH_BYTES + out.write(header, HEADER_LENGTH_BYTES);
  for (const [, json] of events) at += out.write(json, at);
  return out;
}
