import { describe, expect, it } from "vitest";
import { alternate, median, pairedRatios } from "../bench/paired";

describe("the benchmark's paired samples (bench/paired.ts)", () => {
  it("takes one sample of every side a round, the order turning each round, and gives each side's in round order", async () => {
    const order: string[] = [];
    const side = (name: string, offset: number) => async (round: number) => {
      order.push(`${name}${round}`);
      return round * 10 + offset;
    };
    const samples = await alternate(4, 0, [side("a", 0), side("b", 1), side("c", 2)]);
    expect(order).toEqual(["a0", "b0", "c0", "b1", "c1", "a1", "c2", "a2", "b2", "a3", "b3", "c3"]);
    expect(samples).toEqual([
      [0, 10, 20, 30],
      [1, 11, 21, 31],
      [2, 12, 22, 32],
    ]);
    // The same rounds taken in two parts (round 0 now, the others later) turn the same way.
    order.length = 0;
    const now = await alternate(1, 0, [side("a", 0), side("b", 1), side("c", 2)]);
    const later = await alternate(3, 1, [side("a", 0), side("b", 1), side("c", 2)]);
    expect(order).toEqual(["a0", "b0", "c0", "b1", "c1", "a1", "c2", "a2", "b2", "a3", "b3", "c3"]);
    expect(now.map((samples, i) => [...samples, ...later[i]!])).toEqual(samples);
  });

  it("waits for each sample before the next one starts (never two sides at once)", async () => {
    let running = 0;
    let most = 0;
    const side = async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 1));
      running--;
    };
    await alternate(3, 0, [side, side]);
    expect(most).toBe(1);
  });

  it("divides each pair, not the medians: one disturbed sample moves one ratio, which the median sets aside", () => {
    // The floor's third sample was disturbed (a pause of 30 ms): the pairs still say 1.2×.
    const ours = [12, 24, 12, 12, 24];
    const floor = [10, 20, 40, 10, 20];
    const paired = pairedRatios(ours, floor);
    expect(paired.ratios).toEqual([1.2, 1.2, 0.3, 1.2, 1.2]);
    expect(paired.median).toBeCloseTo(1.2, 10);
    // The ratio of the two medians, as the runs before this one took it, says 0.6×.
    expect(median(ours) / median(floor)).toBeCloseTo(0.6, 10);
  });

  it("refuses sides of different lengths or none", () => {
    expect(() => pairedRatios([1, 2], [1])).toThrow(/as many samples/);
    expect(() => pairedRatios([], [])).toThrow(/as many samples/);
  });

  it("takes the middle value, or the mean of the two middle ones", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});
