/**
 * Attempt groups' figures (docs/architecture.md, "Attempt groups"), in `npm run bench` (alone:
 * BENCH_ONLY=attempts), through the instrumented worker and a real sidecar over a repository of 10,000
 * committed files. Goals: 4 attempts on one machine all running (worktrees made, first checkpoints taken,
 * the prompt at each agent) ≤ 3 s; the compare answer for 4 attempts of 10 changed files ≤ 300 ms. Beside
 * them, what a group costs the objects: storage writes per attempt-minute (team and machine) and calls
 * on the team object per group.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { ObjectStats } from "../dev/object-stats";
import { newSecret, newVapidKeys, startSidecar, startWorker } from "../dev/runtime";

export interface AttemptFigures {
  files: number;
  /** POST /v1/attempts to every attempt's agent streaming its turn (median of the runs). */
  allRunningMs: number;
  allRunningMaxMs: number;
  /** Beside each run, on the same disk at the same moment: four `git worktree add` of the repository at once, nothing else (median). */
  checkoutAloneMs: number;
  /** The machine's 1-minute load average at the end of the start runs. */
  load: number;
  /** GET /v1/attempts/{id} for 4 finished attempts of 10 changed files each (median, p90). */
  compareMs: number;
  compareP90Ms: number;
  /** GET …/diff of one attempt against another (10 files each, median). */
  diffMs: number;
  /** Writes per attempt-minute of 4 attempts streaming for WRITE_MINUTES: the team's object, the machine's. */
  teamWritesPerAttemptMinute: number;
  machineWritesPerAttemptMinute: number;
  /** Calls on the team's object for one group of 4 (start, reports, its audit lines), none of them reads. */
  teamCallsPerGroup: number;
  runs: number;
}

const FILES = 10_000;
const RUNS = 3;
const COMPARES = 30;
/** The streaming group: 4 attempts × this many updates at 100 ms. */
const STREAM_UPDATES = 300;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.9))]!;

type Group = { id: string; state: string; attempts: { n: number; task: string | null; state: string; changes: { files: number } | null }[] };

export async function benchAttempts(): Promise<AttemptFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-attempts-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts"), ...newVapidKeys() };
  const worker = await startWorker({ secrets, vars: { ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json" }, instrumented: true });
  const repo = join(dir, "repo");
  for (let d = 0; d < 100; d++) {
    mkdirSync(join(repo, "src", `module${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(repo, "src", `module${d}`, `file${f}.ts`), `export const value${f} = ${d * 100 + f};\n`.repeat(8));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("-c", "user.name=bench", "-c", "user.email=bench@example.com", "add", ".");
  git("-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "10,000 files");
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${worker.url}${path}`, { ...init, headers: { authorization: `Bearer ${secrets.API_TOKEN}`, "content-type": "application/json", ...init.headers } });
  const json = async <T>(res: Promise<Response>): Promise<T> => {
    const r = await res;
    if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
    return (await r.json()) as T;
  };
  const stats = async (binding: "TEAM" | "MACHINE", name: string) => {
    const ns = await worker.mf.getDurableObjectNamespace(binding);
    return (ns.get(ns.idFromName(name)) as unknown as { debugStats(): Promise<ObjectStats> }).debugStats();
  };
  const start = (prompt: string) =>
    json<Group>(
      api("/v1/attempts", {
        method: "POST",
        body: JSON.stringify({ prompt, cwd: repo, attempts: [1, 2, 3, 4].map(() => ({ agent: "mock", machine: "local" })) }),
      }),
    );
  /**
   * Polled on the machine (the tasks and their sessions), never on the team: its calls are what a group costs.
   * Every 50 ms: a poll is 8 requests through the worker, and at every 10 ms they took most of a core of
   * the two the start itself needs (git's checkouts, four agents starting), so the bench measured itself.
   */
  const until = async (ok: () => Promise<boolean>, what: string, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const streaming = async (task: string) => {
    const read = await json<{ session: string | null }>(api(`/v1/tasks/${task}`));
    if (!read.session) return false;
    const transcript = await json<{ entries: { kind: string }[] }>(api(`/v1/sessions/${read.session}/transcript`));
    return transcript.entries.some((e) => e.kind === "text");
  };
  const ended = async (task: string) =>
    ["succeeded", "failed", "cancelled", "timed_out"].includes((await json<{ state: string }>(api(`/v1/tasks/${task}`))).state);
  try {
    await sidecar.connected();
    // 1. From the request to all four agents streaming their turn.
    const startTimes: number[] = [];
    const checkoutTimes: number[] = [];
    const run4 = promisify(execFile);
    for (let run = 0; run < RUNS; run++) {
      const began = performance.now();
      const group = await start("/slow 1000 50");
      const tasks = group.attempts.map((a) => a.task!);
      await until(async () => (await Promise.all(tasks.map(streaming))).every(Boolean), "four attempts running");
      startTimes.push(performance.now() - began);
      await json(api(`/v1/attempts/${group.id}/cancel`, { method: "POST" }));
      await until(async () => (await Promise.all(tasks.map(ended))).every(Boolean), "four attempts cancelled");
      // What the disk alone asks for four checkouts now (the runtime's part is the rest of the figure above).
      const probes = [1, 2, 3, 4].map((n) => join(dir, `probe-${run}-${n}`));
      const checkoutBegan = performance.now();
      // All four are let finish before any failure is thrown: a checkout still writing would race the clean-up.
      const added = await Promise.allSettled(
        probes.map((p) => run4("git", ["-c", "checkout.workers=0", "worktree", "add", "-q", "--detach", p, "main"], { cwd: repo })),
      );
      const failed = added.find((a) => a.status === "rejected");
      if (failed) throw new Error(`bench: git worktree add (the disk's probe) failed: ${String(failed.reason)}`);
      checkoutTimes.push(performance.now() - checkoutBegan);
      for (const p of probes) git("worktree", "remove", "--force", p);
    }
    const load = loadavg()[0]!;
    // 2. Compare: 4 finished attempts of 10 changed files each.
    const team0 = await stats("TEAM", "team");
    const scattered = await start("/scatter 10 written by {{folder}}");
    await until(async () => (await Promise.all(scattered.attempts.map((a) => ended(a.task!)))).every(Boolean), "four attempts of 10 files");
    // The machine's last report may still be on its way: read the group until it says finished (each read one team call, taken off).
    let reads = 1;
    let group = await json<Group>(api(`/v1/attempts/${scattered.id}`));
    for (; group.state !== "finished"; reads++) group = await json<Group>(api(`/v1/attempts/${scattered.id}`));
    const team1 = await stats("TEAM", "team");
    if (group.attempts.some((a) => a.changes?.files !== 10)) throw new Error(`bench: attempts did not change 10 files each: ${JSON.stringify(group.attempts)}`);
    const compareTimes: number[] = [];
    for (let i = 0; i < COMPARES; i++) {
      const began = performance.now();
      await json<Group>(api(`/v1/attempts/${scattered.id}`));
      compareTimes.push(performance.now() - began);
    }
    const diffTimes: number[] = [];
    for (let i = 0; i < 10; i++) {
      const began = performance.now();
      await json(api(`/v1/attempts/${scattered.id}/diff?n=1&against=2`));
      diffTimes.push(performance.now() - began);
    }
    // 3. What streaming attempts write: 4 attempts of STREAM_UPDATES updates at 100 ms (the team is written only by their reports).
    const teamBefore = await stats("TEAM", "team");
    const machineBefore = await stats("MACHINE", "local");
    const began = performance.now();
    const slow = await start(`/slow ${STREAM_UPDATES} 100`);
    await until(async () => (await Promise.all(slow.attempts.map((a) => ended(a.task!)))).every(Boolean), "four streaming attempts", 300_000);
    const attemptMinutes = (4 * (performance.now() - began)) / 60_000;
    const teamAfter = await stats("TEAM", "team");
    const machineAfter = await stats("MACHINE", "local");
    return {
      files: FILES,
      allRunningMs: median(startTimes),
      allRunningMaxMs: Math.max(...startTimes),
      checkoutAloneMs: median(checkoutTimes),
      load,
      compareMs: median(compareTimes),
      compareP90Ms: p90(compareTimes),
      diffMs: median(diffTimes),
      teamWritesPerAttemptMinute: (teamAfter.writes - teamBefore.writes) / attemptMinutes,
      machineWritesPerAttemptMinute: (machineAfter.writes - machineBefore.writes) / attemptMinutes,
      teamCallsPerGroup: team1.invocations.rpc - team0.invocations.rpc - reads,
      runs: RUNS,
    };
  } finally {
    await sidecar.stop();
    await worker.dispose();
    // Retried: a process the failure left writing (git, an agent) may still add a file for a moment.
    await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

export function attemptsReport(f: AttemptFigures): string {
  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  return [
    `Attempt groups (a repository of ${f.files.toLocaleString("en")} files, 4 attempts of the mock agent on one machine):`,
    `  request to all 4 running (worktrees made, first checkpoints taken, prompts at the agents): ${fmt(f.allRunningMs)} ms median, ${fmt(f.allRunningMaxMs)} ms worst of ${f.runs} (goal ≤ 3000)`,
    `  beside it, four \`git worktree add\` at once and nothing else: ${fmt(f.checkoutAloneMs)} ms median (load average ${f.load.toFixed(1)})`,
    `  compare (GET /v1/attempts/{id}, 4 attempts of 10 files): ${fmt(f.compareMs)} ms median, ${fmt(f.compareP90Ms)} ms p90 (goal ≤ 300); a diff of two attempts: ${fmt(f.diffMs)} ms`,
    `  storage writes per attempt-minute (4 attempts streaming ${STREAM_UPDATES} updates each): team object ${fmt(f.teamWritesPerAttemptMinute)}, machine object ${fmt(f.machineWritesPerAttemptMinute)}`,
    `  calls on the team object for one group of 4, start to end (reads aside): ${f.teamCallsPerGroup}`,
  ].join("\n");
}
