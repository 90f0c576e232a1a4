import { describe, expect, it } from "vitest";
import { MAX_RETRY_AFTER_MS, Redial, redialDelayMs, retryAfterMs } from "./tunnel-redial";

describe("redialDelayMs: when a sidecar dials the worker again", () => {
  it("spreads the first redial after the worker went away over the window, with nothing fixed", () => {
    expect(redialDelayMs(0, 1012, 2_000, () => 0)).toBe(0);
    expect(redialDelayMs(0, 1006, 2_000, () => 0.5)).toBe(1_000);
    expect(redialDelayMs(0, 1001, 2_000, () => 0.999)).toBeCloseTo(1_998, 0);
  });

  it("backs off exponentially with ±25 % jitter after refusals and failed dials, capped at 5 s", () => {
    // A close the worker chose (not a going-away code) is not spread: it backs off from 250 ms.
    expect(redialDelayMs(0, 4003, 2_000, () => 0.5)).toBe(250);
    expect(redialDelayMs(1, 1006, 2_000, () => 0.5)).toBe(500);
    expect(redialDelayMs(3, 1006, 2_000, () => 0)).toBe(2_000 * 0.75);
    expect(redialDelayMs(3, 1006, 2_000, () => 1)).toBe(2_000 * 1.25);
    expect(redialDelayMs(12, 1006, 2_000, () => 0.5)).toBe(5_000);
    expect(redialDelayMs(30, 1006, 2_000, () => 1)).toBe(6_250);
  });
});

describe("retryAfterMs: the worker's Retry-After (RFC 9110)", () => {
  it("reads delay-seconds and an HTTP-date, bounded; anything else is no answer", () => {
    const now = Date.parse("2026-11-26T12:00:00Z");
    expect(retryAfterMs("3", now)).toBe(3_000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs("Thu, 26 Nov 2026 12:00:07 GMT", now)).toBe(7_000);
    expect(retryAfterMs("Thu, 26 Nov 2026 11:59:00 GMT", now)).toBe(0); // a date past: at once (the backoff still applies)
    expect(retryAfterMs("86400", now)).toBe(MAX_RETRY_AFTER_MS);
    for (const nothing of [undefined, null, "", "soon", "-5", "1.5"]) expect(retryAfterMs(nothing, now)).toBeNull();
  });
});

describe("Redial: a tunnel's redials", () => {
  it("honours a refusal's Retry-After: never sooner than asked, spread over the window after it", () => {
    const redial = new Redial(2_000, () => 0.5);
    redial.refused(8_000);
    expect(redial.next(1006)).toBe(8_000 + 1_000);
    // Without Retry-After the same failure backs off blindly: attempt 1, 500 ms.
    expect(redial.next(1006)).toBe(500);
    // A Retry-After shorter than the backoff reached does not bring the dial sooner.
    for (let i = 0; i < 10; i++) redial.next(1006);
    redial.refused(1_000);
    expect(redial.next(1006)).toBe(5_000 + 1_000);
  });

  it("spreads sidecars refused with the same Retry-After instead of bringing them back in one instant", () => {
    const delays = [0, 0.25, 0.5, 0.75, 0.999].map((r) => {
      const redial = new Redial(2_000, () => r);
      redial.refused(5_000);
      return redial.next(1006);
    });
    expect(Math.min(...delays)).toBe(5_000);
    expect(Math.max(...delays) - Math.min(...delays)).toBeGreaterThan(1_900);
  });

  it("starts afresh after a welcome, and forgets an answer once used", () => {
    const redial = new Redial(2_000, () => 0.5);
    redial.next(1006);
    redial.next(1006);
    expect(redial.attempts).toBe(2);
    redial.refused(30_000);
    redial.connected();
    expect(redial.attempts).toBe(0);
    expect(redial.next(1012)).toBe(1_000); // the going-away spread, no Retry-After left over
  });
});
