/**
 * `readCaller`, the hand-written check of a caller in front of `Caller` (zod), on a table of good and bad
 * callers: what it takes by hand the schema accepts, with the same value key for key; what it does not, the
 * schema decides (it throws for what it refuses, as `Caller.parse` did).
 */
import { describe, expect, it } from "vitest";
import { Caller, readCaller } from "./ownership";

const good = { tokenId: "0123456789abcdef", name: "ci", role: "member", expiresAtMs: 1_800_000_000_000 };

describe("readCaller against Caller", () => {
  const table: unknown[] = [
    good,
    { ...good, tokenId: null, expiresAtMs: null },
    { tokenId: null, name: "admin", role: "admin", expiresAtMs: null },
    { ...good, role: "viewer", name: "x".repeat(512), tokenId: "t".repeat(64) },
    { expiresAtMs: 5, role: "member", name: "n", tokenId: "t" },
    // Refused by both
    { ...good, tokenId: "t".repeat(65) },
    { ...good, name: "x".repeat(513) },
    { ...good, role: "owner" },
    { ...good, expiresAtMs: Number.POSITIVE_INFINITY },
    { ...good, expiresAtMs: Number.NaN },
    { ...good, expiresAtMs: "soon" },
    { ...good, tokenId: 7 },
    { tokenId: null, name: "n", role: "admin" },
    { ...good, extra: 1, tokenId: undefined },
    [],
    null,
  ];
  it("accepts what the schema accepts, as the schema gives it back, and refuses what it refuses", () => {
    for (const value of table) {
      const full = Caller.safeParse(value);
      if (!full.success) {
        expect(() => readCaller(value), JSON.stringify(value)).toThrow();
        continue;
      }
      const read = readCaller(value);
      expect(read).toStrictEqual(full.data);
      expect(Object.keys(read)).toEqual(Object.keys(full.data));
    }
  });

  it("takes a caller with extra keys through the schema, which leaves them out", () => {
    expect(readCaller({ ...good, extra: 1 })).toStrictEqual(Caller.parse(good));
  });
});
