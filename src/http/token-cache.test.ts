import { describe, expect, it } from "vitest";
import { revocationAnsweredByMachine, VERIFIED_FOR_MS, VerifiedTokens } from "./token-cache";

const identity = (expiresAtMs: number | null = null) => ({ name: "t", role: "member" as const, machines: "*" as const, tokenId: "tok1", expiresAtMs });

describe("VerifiedTokens: what an isolate keeps of a verified token", () => {
  it("keeps an identity for a minute, never past its token's expiry, and forgets a refused one", () => {
    const kept = new VerifiedTokens();
    kept.keep("h1", identity(), 1_000);
    expect(kept.get("h1", 1_000 + VERIFIED_FOR_MS - 1)).toMatchObject({ name: "t" });
    expect(kept.get("h1", 1_000 + VERIFIED_FOR_MS)).toBeNull();
    kept.keep("h2", identity(5_000), 1_000);
    expect(kept.get("h2", 4_999)).not.toBeNull();
    expect(kept.get("h2", 5_000)).toBeNull();
    kept.keep("h3", identity(), 1_000);
    kept.forget("h3");
    expect(kept.get("h3", 1_001)).toBeNull();
  });

  it("holds at most 2,000 tokens, the oldest going first", () => {
    const kept = new VerifiedTokens();
    for (let i = 0; i < 2_100; i++) kept.keep(`h${i}`, identity(), 0);
    expect(kept.size).toBe(2_000);
    expect(kept.get("h0", 1)).toBeNull();
    expect(kept.get("h2099", 1)).not.toBeNull();
  });
});

describe("revocationAnsweredByMachine: which requests may take a kept token", () => {
  it("only a message to an ACP server, under /v1 and /machines/{machine}/v1", () => {
    expect(revocationAnsweredByMachine("POST", "/v1/acp/s1")).toBe(true);
    expect(revocationAnsweredByMachine("POST", "/machines/m1/v1/acp/s1")).toBe(true);
    for (const [method, path] of [
      ["GET", "/v1/acp/s1"],
      ["DELETE", "/v1/acp/s1"],
      ["POST", "/v1/acp"],
      ["POST", "/v1/acp/s1/extra"],
      ["POST", "/v1/tokens"],
      ["POST", "/acp"],
      ["POST", "/machines/m1/v1/processes"],
    ] as const)
      expect(revocationAnsweredByMachine(method, path), `${method} ${path}`).toBe(false);
  });
});
