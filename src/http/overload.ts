/**
 * A worker under load says so (docs/architecture.md, "What a sidecar does when the worker refuses it"):
 * when the platform refuses a Durable Object's work because the object is overloaded (Cloudflare marks
 * such an error `overloaded`, and one worth trying again `retryable`), the caller gets 503 `busy` with
 * `Retry-After`, which the sidecar honours (sidecar/tunnel-redial.ts) instead of redialing blindly.
 */
import { problemResponse } from "../lib/problem-response";

/** Seconds a refused caller is asked to wait; the sidecar spreads its redial over the 2 s after it. */
export const BUSY_RETRY_AFTER_SECONDS = 2;

function flagged(err: unknown, flag: "overloaded" | "retryable"): boolean {
  return typeof err === "object" && err !== null && Reflect.get(err, flag) === true;
}

/** The refusal for an error the platform raised under load, or null for any other error (thrown on as it was). */
export function overloadRefusal(err: unknown, what: string): Response | null {
  if (!flagged(err, "overloaded") && !flagged(err, "retryable")) return null;
  return problemResponse(
    {
      code: "busy",
      detail: `${what} is busy (${err instanceof Error ? err.message.slice(0, 200) : "overloaded"}); try again after ${BUSY_RETRY_AFTER_SECONDS} s`,
    },
    { "retry-after": String(BUSY_RETRY_AFTER_SECONDS) },
  );
}
