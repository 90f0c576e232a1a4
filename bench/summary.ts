/**
 * `npm run bench:all`'s last step: the medians of the full runs it kept (bench/results/run-<n>.json, each a
 * copy of that run's latest.json) against issue 53's goals, and the scale run's busy and storm figures
 * (bench/results/scale.json). Prints a Markdown table for bench/README.md and writes the medians into
 * latest.json as `runs` (with the scale figures as `scale`), so that one file carries them all.
 *
 * The stream and the 1 MiB write are each run's median of ratios taken in pairs (bench/paired.ts: the
 * samples of both sides alternated); a run written before those pairs existed gives the ratio of its medians.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ROOT } from "../dev/runtime";

const Paired = z.object({ median: z.number() });

const Run = z.object({
  at: z.string(),
  direct: z.object({ streamMsgsPerSec: z.number() }),
  floor: z.object({
    rttP50Ms: z.number(),
    cpuUsPerCall: z.record(z.string(), z.number()).optional(),
    smallFiles: z.object({ writeMs: z.number(), readMs: z.number() }).optional(),
  }),
  thisProject: z.object({
    rttP50Ms: z.number(),
    cpuUsPerCall: z.record(z.string(), z.number()).optional(),
    streamMsgsPerSec: z.number(),
    streamVsDirect: Paired.optional(),
    files: z.object({ smallWriteMs: z.number(), smallReadMs: z.number(), smallVsFloor: z.object({ write: Paired, read: Paired }).optional() }).optional(),
  }),
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "n/a");

const dir = join(ROOT, "bench", "results");
const names = (await readdir(dir)).filter((f) => /^run-\d+\.json$/.test(f)).sort();
const runs = await Promise.all(names.map(async (f) => Run.parse(JSON.parse(await readFile(join(dir, f), "utf8")))));
const goals: [string, (r: z.infer<typeof Run>) => number, number, "≤" | "≥"][] = [
  ["relay p50 ÷ the floor's", (r) => r.thisProject.rttP50Ms / r.floor.rttP50Ms, 1.25, "≤"],
  [
    "workerd CPU per round trip ÷ the floor's",
    (r) => (r.thisProject.cpuUsPerCall?.workerd ?? Number.NaN) / (r.floor.cpuUsPerCall?.workerd ?? Number.NaN),
    1.3,
    "≤",
  ],
  [
    "stream ÷ the SDK client on the agent's stdio",
    (r) => r.thisProject.streamVsDirect?.median ?? r.thisProject.streamMsgsPerSec / r.direct.streamMsgsPerSec,
    0.95,
    "≥",
  ],
  [
    "1 MiB write ÷ the floor's",
    (r) => r.thisProject.files?.smallVsFloor?.write.median ?? (r.thisProject.files?.smallWriteMs ?? Number.NaN) / (r.floor.smallFiles?.writeMs ?? Number.NaN),
    1.2,
    "≤",
  ],
];
const lines = [`| figure | ${runs.map((_, i) => `run ${i + 1}`).join(" | ")} | median | goal |`, `|---|${runs.map(() => "---:|").join("")}---:|---|`];
const medians: Record<string, number> = {};
for (const [name, get, goal, way] of goals) {
  const values = runs.map(get);
  const m = median(values);
  medians[name] = m;
  const met = way === "≤" ? m <= goal : m >= goal;
  lines.push(`| ${name} | ${values.map((v) => `${fmt(v)}×`).join(" | ")} | ${fmt(m)}× | ${way} ${goal}× (${met ? "met" : "missed"}) |`);
}
console.log(lines.join("\n"));
const scale = JSON.parse(await readFile(join(dir, "scale.json"), "utf8").catch(() => "null")) as { busy?: unknown; storm?: unknown } | null;
if (scale) console.log(`\nscale: ${JSON.stringify({ busy: scale.busy, storm: scale.storm }, null, 2)}`);
const latest = JSON.parse(await readFile(join(dir, "latest.json"), "utf8")) as Record<string, unknown>;
await writeFile(
  join(dir, "latest.json"),
  `${JSON.stringify({ ...latest, runs: { count: runs.length, at: runs.map((r) => r.at), medians }, scale: scale ? { busy: scale.busy, storm: scale.storm } : null }, null, 2)}\n`,
);
