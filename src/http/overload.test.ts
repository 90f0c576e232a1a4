import { describe, expect, it } from "vitest";
import { BUSY_RETRY_AFTER_SECONDS, overloadRefusal } from "./overload";

/** An error as the platform raises it under load: its flags are properties of the Error. */
function platformError(message: string, flags: { overloaded?: boolean; retryable?: boolean }): Error {
  return Object.assign(new Error(message), flags);
}

describe("overloadRefusal: a worker under load says when to come back", () => {
  it("answers 503 busy with Retry-After for an overloaded or retryable object error", async () => {
    for (const err of [
      platformError("Durable Object is overloaded. Too many requests queued.", { overloaded: true }),
      platformError("reset", { retryable: true }),
    ]) {
      const res = overloadRefusal(err, "machine 'm''s object");
      expect(res?.status).toBe(503);
      expect(res?.headers.get("retry-after")).toBe(String(BUSY_RETRY_AFTER_SECONDS));
      expect(res?.headers.get("content-type")).toBe("application/problem+json");
      expect(((await res!.json()) as { detail: string }).detail).toContain("machine 'm''s object is busy");
    }
  });

  it("leaves every other error to be thrown on as it was", () => {
    expect(overloadRefusal(new Error("a bug"), "x")).toBeNull();
    expect(overloadRefusal(platformError("not retryable", { retryable: false }), "x")).toBeNull();
    expect(overloadRefusal("a string", "x")).toBeNull();
  });
});
