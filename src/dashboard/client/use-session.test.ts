import { describe, expect, it } from "vitest";
import { connectionText } from "./use-session";

describe("the transcript's connection, in words", () => {
  const down = { ended: false, error: "", outage: true, retryInMs: 4_000 };
  it("says nothing while the stream is there, offline while the service or network is gone, and a refusal as the API said it", () => {
    expect(connectionText({ ...down, retryInMs: null })).toBe("");
    expect(connectionText({ ...down, error: "fetch failed" })).toBe("Offline: this is the transcript as last seen. Trying again in 4 s.");
    expect(connectionText({ ...down, outage: false, error: "no session s_1" })).toBe("The live transcript was refused (no session s_1). Trying again in 4 s.");
  });
  it("says a refusal for good without a next try", () => {
    expect(connectionText({ ended: true, error: "no session s_1", outage: false, retryInMs: null })).toBe("The live transcript was refused (no session s_1).");
  });
});
