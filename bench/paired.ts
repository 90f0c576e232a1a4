/**
 * Samples taken in pairs: the benchmark's ratios against a yardstick (the direct client's stream, the floor's
 * 1 MiB write) from samples of both sides taken one after the other, round after round, instead of each
 * side's samples in a block of its own minutes apart. On a shared machine a disturbance of a few hundred
 * milliseconds then lands on one pair (whose ratio the median sets aside), not on one side of every pair.
 */
/** A ratio measured in pairs: each pair's, in the order taken, and their median. */
export interface Paired {
  median: number;
  ratios: number[];
}

/**
 * `rounds` rounds of one sample of every side, numbered from `first` (a run may take some rounds now and
 * the rest later). The order turns each round (A B C, B C A, C A B, ...), so that no side always runs
 * first (after the pause between rounds) or always right after another one. Returns each side's samples
 * in round order: `samples[side][i]` for round `first + i`.
 */
export async function alternate<T>(rounds: number, first: number, sides: ((round: number) => Promise<T>)[]): Promise<T[][]> {
  const samples = sides.map(() => [] as T[]);
  for (let round = first; round < first + rounds; round++) {
    for (let k = 0; k < sides.length; k++) {
      const side = (round + k) % sides.length;
      samples[side]!.push(await sides[side]!(round));
    }
  }
  return samples;
}

/** `a[i] ÷ b[i]` for each pair, and their median (the two lists are one side each, in round order). */
export function pairedRatios(a: number[], b: number[]): Paired {
  if (a.length !== b.length || a.length === 0) throw new Error(`pairs need as many samples on each side (${a.length} and ${b.length})`);
  const ratios = a.map((x, i) => x / b[i]!);
  return { median: median(ratios), ratios };
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
