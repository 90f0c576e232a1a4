import { describe, expect, it } from "vitest";
import { signature } from "./webhook";

describe("signature", () => {
  it("is t=<seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>'>, as a receiver checks it in a few lines", async () => {
    const body = JSON.stringify({ event: "turn.finished", text: "done" });
    const header = await signature("a-secret-of-16-chars", body, 1_700_000_000);
    // Computed apart from this code (Python's hmac module) for this very body.
    const expected = "ae24d2132883daa300209214d06646cfffe6960cd15386541f5ac98bc11de364";
    expect(header).toBe(`t=1700000000,v1=${expected}`);
  });
});
