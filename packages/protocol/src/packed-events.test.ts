import { describe, expect, it } from "vitest";
import { PackedEventsFrame } from "./frames";
import { cutEvents, packedBatchOf } from "./packed-events";

const bytes = (text: string) => new TextEncoder().encode(text);
const valid = {
  t: "ev",
  sub: "s1",
  pieces: [
    [1, 2],
    [2, 3],
  ],
  bytes: bytes("{}[1]"),
};

describe("a packed batch's light check", () => {
  it("accepts what the schema accepts, giving back exactly what the schema gives", () => {
    for (const frame of [
      valid,
      { ...valid, also: ["s2", "s3"] },
      { ...valid, gap: { from: 1, to: 4 } },
      { ...valid, gap: { from: 1, to: 4, tooLarge: true }, also: [] },
      { ...valid, pieces: [], bytes: bytes(""), gap: { from: 3, to: 9 } },
      { ...valid, unknown: "stripped", gap: { from: 1, to: 2, extra: 1 } },
      { ...valid, sub: "x".repeat(256) },
    ]) {
      const light = packedBatchOf(frame);
      expect(light, JSON.stringify(frame)).not.toBeNull();
      const full = PackedEventsFrame.safeParse(frame);
      expect(full.success).toBe(true);
      expect(light).toEqual(full.data);
    }
  });

  it("leaves to the schema every frame the schema refuses", () => {
    for (const frame of [
      null,
      [],
      { ...valid, t: "out" },
      { ...valid, sub: "" },
      { ...valid, sub: "x".repeat(257) },
      { ...valid, sub: 7 },
      { ...valid, also: "s2" },
      { ...valid, also: [""] },
      { ...valid, also: Array.from({ length: 1001 }, (_, i) => `s${i}`) },
      { ...valid, gap: { from: 1 } },
      { ...valid, gap: { from: 1, to: 2.5 } },
      { ...valid, gap: { from: 1, to: 2, tooLarge: "yes" } },
      { ...valid, gap: null },
      {
        ...valid,
        pieces: [
          [1, 2, 3],
          [2, 3],
        ],
      },
      { ...valid, pieces: [[1, 2], [2]] },
      {
        ...valid,
        pieces: [
          [1, -2],
          [2, 7],
        ],
      },
      {
        ...valid,
        pieces: [
          ["1", 2],
          [2, 3],
        ],
      },
      {
        ...valid,
        pieces: [
          [1, 2],
          [2, 4],
        ],
      },
      {
        ...valid,
        pieces: [
          [1, 1.5],
          [2, 3.5],
        ],
      },
      { ...valid, pieces: "[[1,5]]" },
      { ...valid, bytes: "{}[1]" },
      { ...valid, bytes: undefined },
    ]) {
      expect(packedBatchOf(frame), JSON.stringify(frame)).toBeNull();
      expect(PackedEventsFrame.safeParse(frame).success, JSON.stringify(frame)).toBe(false);
    }
  });
});

describe("a packed batch's events", () => {
  /** Each piece decoded on its own, as the object did before the one decode. */
  const onePieceAtATime = (pieces: [number, number][], all: Uint8Array) => {
    let at = 0;
    return pieces.map(([seq, length]) => {
      const text = new TextDecoder().decode(all.subarray(at, at + length));
      at += length;
      return [seq, text];
    });
  };

  it("are the same texts however their bytes are (ASCII, multi-byte, invalid, a BOM, a character cut between pieces)", () => {
    const euro = bytes("€"); // 3 bytes
    const cases: { pieces: [number, number][]; all: Uint8Array }[] = [
      {
        pieces: [
          [1, 2],
          [2, 3],
        ],
        all: bytes("{}[1]"),
      },
      {
        pieces: [
          [1, 9],
          [2, 2],
        ],
        all: bytes('"héllo"{}'),
      },
      {
        pieces: [
          [1, 4],
          [2, 2],
        ],
        all: bytes("🙂{}"),
      },
      {
        pieces: [
          [1, 1],
          [2, 2],
        ],
        all: new Uint8Array([0xff, 0x7b, 0x7d]),
      },
      { pieces: [[1, 5]], all: new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]) },
      {
        pieces: [
          [1, 2],
          [2, 1],
        ],
        all: new Uint8Array([0x7b, 0x7d, 0x80]),
      },
      {
        pieces: [
          [1, 2],
          [2, 1],
        ],
        all: euro,
      },
      {
        pieces: [
          [1, 4],
          [2, 2],
        ],
        all: new Uint8Array([0x7b, 0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
      },
      { pieces: [], all: new Uint8Array() },
    ];
    for (const { pieces, all } of cases) expect(cutEvents(pieces, all), String([...all])).toEqual(onePieceAtATime(pieces, all));
  });
});
