import { describe, expect, it } from "vitest";
import { redialDelayMs } from "./tunnel";

describe("redialDelayMs: when a sidecar dials the worker again", () => {
  it("spreads the first redial after the worker went away over the window, with nothing fixed", () => {
    expect(redialDelayMs(0, 1012, 2_000, () => 0)).toBe(0);
    expect(redialDelayMs(0, 1006, 2_000, () => 0.5)).toBe(1_000);
    expect(redialDelayMs(0, 1001, 2_000, () => 0.999)).toBeCloseTo(1_998, 0);
  });

  it("backs off exponentially with ±25 % jitter after refusals and failed dials, capped at 10 s", () => {
    // A close the worker chose (not a going-away code) is not spread: it backs off from 250 ms.
    expect(redialDelayMs(0, 4003, 2_000, () => 0.5)).toBe(250);
    expect(redialDelayMs(1, 1006, 2_000, () => 0.5)).toBe(500);
    expect(redialDelayMs(3, 1006, 2_000, () => 0)).toBe(2_000 * 0.75);
    expect(redialDelayMs(3, 1006, 2_000, () => 1)).toBe(2_000 * 1.25);
    expect(redialDelayMs(12, 1006, 2_000, () => 0.5)).toBe(10_000);
    expect(redialDelayMs(30, 1006, 2_000, () => 1)).toBe(12_500);
  });
});
