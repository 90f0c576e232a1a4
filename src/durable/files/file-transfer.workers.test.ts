/**
 * An upload's body cut into pieces (durable/files/file-transfer.ts), inside workerd: a byte stream, as a
 * request's body is, and a stream of odd-sized chunks that is not one. Every piece is full but the last;
 * the bytes come out as they went in.
 */
import { describe, expect, it } from "vitest";
import { piecesOf } from "./file-transfer";

const SIZE = 1000;

function bodyOf(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 7) % 251);
}

/** A stream that is not a byte stream, handing out `body` in chunks of 1, 2, … 37 bytes and again. */
function chunked(body: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  let n = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= body.length) return controller.close();
      const length = (n++ % 37) + 1;
      controller.enqueue(body.slice(at, at + length));
      at += length;
    },
  });
}

async function allPieces(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const pieces = piecesOf(stream, SIZE);
  const out: Uint8Array[] = [];
  for (;;) {
    const piece = await pieces.next();
    out.push(piece);
    if (piece.length < SIZE) return out;
  }
}

async function joined(pieces: Uint8Array[]): Promise<Uint8Array> {
  return new Uint8Array(await new Blob(pieces).arrayBuffer());
}

describe("an upload's pieces", () => {
  for (const [kind, streamOf] of [
    ["a byte stream", (body: Uint8Array) => new Response(body).body!],
    ["a stream of small chunks", chunked],
  ] as const) {
    it(`are full but the last, in order, from ${kind}`, async () => {
      const body = bodyOf(2 * SIZE + 123);
      const pieces = await allPieces(streamOf(body));
      expect(pieces.map((p) => p.length)).toEqual([SIZE, SIZE, 123]);
      expect(await joined(pieces)).toEqual(body);
    });

    it(`end with an empty one when ${kind} ends with a full piece, and are one empty piece for an empty body`, async () => {
      const body = bodyOf(2 * SIZE);
      const pieces = await allPieces(streamOf(body));
      expect(pieces.map((p) => p.length)).toEqual([SIZE, SIZE, 0]);
      expect(await joined(pieces)).toEqual(body);
      expect((await allPieces(streamOf(new Uint8Array()))).map((p) => p.length)).toEqual([0]);
    });
  }
});
