import { describe, expect, it } from "vitest";
import { mintMachineToken, verifyMachineToken } from "./machine-token";

const secret = "ts_test-secret";

describe("machine tokens", () => {
  it("verify for their machine only, carrying generation and expiry", async () => {
    const token = await mintMachineToken(secret, "lap.top", { generation: 3, expiresAtMs: 4_102_444_800_000 });
    expect(await verifyMachineToken(secret, "lap.top", token, 0)).toEqual({
      ok: true,
      claims: { machine: "lap.top", generation: 3, expiresAtMs: 4_102_444_800_000 },
    });
    expect((await verifyMachineToken(secret, "lap", token)).ok).toBe(false);
    expect((await verifyMachineToken("another-secret", "lap.top", token)).ok).toBe(false);
  });

  it("refuse a changed generation or expiry (both are inside the MAC)", async () => {
    const token = await mintMachineToken(secret, "m", { generation: 1 });
    const [prefix, machine, , expires, mac] = token.split(".");
    expect((await verifyMachineToken(secret, "m", [prefix, machine, "2", expires, mac].join("."))).ok).toBe(false);
    expect((await verifyMachineToken(secret, "m", [prefix, machine, "1", "99999999999", mac].join("."))).ok).toBe(false);
  });

  it("refuse a MAC spelled differently in the bits base64url leaves unused (one token, one text)", async () => {
    const token = await mintMachineToken(secret, "m");
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(token.at(-1)!);
    // 43 characters hold 258 bits for 256: the last character's two low bits are not part of the MAC.
    for (const unused of [1, 2, 3]) {
      const twin = token.slice(0, -1) + alphabet[last ^ unused];
      expect((await verifyMachineToken(secret, "m", twin)).ok, twin).toBe(false);
    }
    expect((await verifyMachineToken(secret, "m", token)).ok).toBe(true);
  });

  it("refuse an expired token, saying when it expired", async () => {
    const token = await mintMachineToken(secret, "m", { expiresAtMs: 1_000_000 });
    const check = await verifyMachineToken(secret, "m", token, 2_000_000);
    expect(check).toEqual({ ok: false, reason: expect.stringContaining("expired at 1970-01-01T00:16:40.000Z") });
  });

  it("refuse malformed and old-format tokens without throwing", async () => {
    for (const token of ["", "mt1.m.abc", "mt2.m.0.0.x", "mt2.m.1.0.!!!", "mt2..1.0.AAAA", "x".repeat(5000)]) {
      expect((await verifyMachineToken(secret, "m", token)).ok, token).toBe(false);
    }
  });
});
