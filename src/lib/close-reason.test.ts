import { describe, expect, it } from "vitest";
import { closeReason } from "./close-reason";

const bytes = (s: string) => new TextEncoder().encode(s).length;

describe("closeReason", () => {
  it("keeps a short reason, and cuts a long one to 123 bytes of UTF-8 without splitting a character", () => {
    expect(closeReason("revoked")).toBe("revoked");
    const long = `the token '${"hölder ✓ ".repeat(20)}' that opened this stream was revoked`;
    const cut = closeReason(long);
    expect(bytes(cut)).toBeLessThanOrEqual(123);
    expect(cut.endsWith("...")).toBe(true);
    expect(long.startsWith(cut.slice(0, -3))).toBe(true);
  });
});
