/**
 * Review's figures (docs/architecture.md, "Review and ship"), in `npm run bench` (alone: BENCH_ONLY=review):
 * a folder of 10,000 files (and a node_modules of 2,000 more, left out) checkpointed by the sidecar's own
 * code on this machine's git. Goals: a checkpoint after 10 files changed ≤ 150 ms, and the bytes
 * it adds; the session's changes of that folder ≤ 100 ms.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkpointKey } from "../sidecar/review/checkpoint-states";
import { Checkpoints } from "../sidecar/review/checkpoints";

export interface ReviewFigures {
  files: number;
  /** The first checkpoint: every file hashed into the shadow repository. */
  firstCheckpointMs: number;
  firstCheckpointBytes: number;
  /** A turn's end after 10 files changed: the checkpoint and the turn's summary (median of the runs). */
  checkpointMs: number;
  checkpointP90Ms: number;
  checkpointBytes: number;
  /** The session's changes (first checkpoint to now, a snapshot of now included), 10 more files changed. */
  changesMs: number;
  changesP90Ms: number;
  runs: number;
}

const FILES = 10_000;
const RUNS = 9;

function sizeOf(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    bytes += entry.isDirectory() ? sizeOf(path) : statSync(path).size;
  }
  return bytes;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.9))]!;

async function timed<T>(work: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await work();
  return [performance.now() - started, value];
}

export async function benchReview(): Promise<ReviewFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-review-"));
  try {
    const folder = join(dir, "project");
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(folder, "src", `module${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(join(folder, "src", `module${d}`, `file${f}.ts`), `export const value${f} = ${d * 100 + f};\n`.repeat(8));
    }
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(folder, "node_modules", `dep${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(join(folder, "node_modules", `dep${d}`, `index${f}.js`), `module.exports = ${f};\n`);
    }
    execFileSync("git", ["init", "-q", folder]);
    const checkpoints = new Checkpoints(join(dir, "data"));
    const key = { agent: "mock", sessionId: "bench" };
    const shadow = join(dir, "data", "checkpoints", checkpointKey(key));
    await checkpoints.sessionOpened(key, folder);
    const [firstCheckpointMs] = await timed(() => checkpoints.turnStarting(key));
    const firstCheckpointBytes = sizeOf(shadow);
    const edit = (run: number, salt: string) => {
      for (let i = 0; i < 10; i++) writeFileSync(join(folder, "src", `module${(run * 10 + i) % 100}`, `file${run % 100}.ts`), `// ${salt} ${run} ${i}\n`);
    };
    const checkpointTimes: number[] = [];
    const checkpointBytes: number[] = [];
    const changesTimes: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      if (run > 0) await checkpoints.turnStarting(key);
      edit(run, "turn");
      const before = sizeOf(shadow);
      const [ms, summary] = await timed(() => checkpoints.turnEnded(key));
      if (summary?.files !== 10) throw new Error(`the turn changed 10 files, the checkpoint says ${summary?.files}`);
      checkpointTimes.push(ms);
      checkpointBytes.push(sizeOf(shadow) - before);
      edit(run, "after");
      const [changesMs, changes] = await timed(() => checkpoints.changes(key, folder));
      if (changes.files.length === 0) throw new Error("the session's changes are empty");
      changesTimes.push(changesMs);
    }
    return {
      files: FILES,
      firstCheckpointMs,
      firstCheckpointBytes,
      checkpointMs: median(checkpointTimes),
      checkpointP90Ms: p90(checkpointTimes),
      checkpointBytes: median(checkpointBytes),
      changesMs: median(changesTimes),
      changesP90Ms: p90(changesTimes),
      runs: RUNS,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function reviewReport(f: ReviewFigures): string {
  const kib = (n: number) => `${Math.round(n / 1024)} KiB`;
  const verdict = (ms: number, goal: number) => (ms <= goal ? `within ${goal} ms` : `OVER ${goal} ms`);
  return [
    `Checkpoints of a ${f.files}-file folder (+2,000 in node_modules, left out), ${f.runs} turns:`,
    `  first checkpoint                 ${f.firstCheckpointMs.toFixed(0)} ms, ${kib(f.firstCheckpointBytes)}`,
    `  a turn's end, 10 files changed   ${f.checkpointMs.toFixed(1)} ms median, ${f.checkpointP90Ms.toFixed(1)} ms p90 (${verdict(f.checkpointMs, 150)}), +${kib(f.checkpointBytes)}`,
    `  the session's changes            ${f.changesMs.toFixed(1)} ms median, ${f.changesP90Ms.toFixed(1)} ms p90 (${verdict(f.changesMs, 100)})`,
  ].join("\n");
}
