/**
 * The permission policy's matching at its worst (docs/architecture.md, "The permission policy"), in `npm run
 * bench` (alone: BENCH_ONLY=policy). What a backtracking engine took seconds on, built to the schema's limits:
 * one pattern of 512 characters against the longest command and path a request carries, and a whole
 * `POST /v1/config/policy/test` body of 1 MiB (a draft and a session's policy, 64 paths of 4,096 characters,
 * a command of 8,192) made to do the most matching it can. Goal: ≤ 5 ms per request. Pure functions, no server.
 */
import { type PermissionFacts, PermissionPolicy } from "../packages/protocol/src/policy";
import { decidePermission } from "../packages/protocol/src/policy-eval";
import { compileCommandPattern, compileGlob } from "../packages/protocol/src/wildcard";
import { LIMITS } from "../packages/protocol/src/limits";
import { percentile } from "./proc";

export interface PolicyFigures {
  /** One 512-character command pattern on an 8,192-character command (ms of CPU: median, max). */
  commandMs: [number, number];
  /** One 512-character glob on a 4,096-character path, on no budget: the per-pattern bound alone. */
  globMs: [number, number];
  /** A whole policy test request of at most 1 MiB, two policies of hostile patterns, already compiled (the machine's object). */
  requestMs: [number, number];
  /** The same with patterns never seen before, so compiled too (the tester with a new draft each time). */
  requestColdMs: [number, number];
  /** What the route already spends parsing that body's two policies (zod), for scale. */
  parseMs: [number, number];
  requestBytes: number;
  runs: number;
}

const RUNS = 30;

/** CPU time (what the issue measured, and what a shared machine's load does not inflate as it does wall time). */
function timed(run: (i: number) => unknown): [number, number] {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = process.cpuUsage();
    run(i);
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  return [percentile(times, 50), Math.max(...times)];
}

/**
 * A policy built to do the most matching it can: 200 deny rules, each a command pattern that matches the long
 * command (so its globs are tried) and globs of stars that almost match each long path. As many patterns as fit
 * in `bytes` of JSON; `seed` makes them new ones.
 */
function hostilePolicy(bytes: number, seed: number): unknown {
  const command = `${"*a".repeat(255)}!`;
  const glob = (n: number) => `${"*a".repeat(240)}*${seed}x${n}!`.slice(-512);
  const globs = Math.floor(bytes / 520) - 200;
  return {
    rules: Array.from({ length: 200 }, (_, r) => {
      const count = Math.min(64, Math.max(1, Math.floor(globs / 200) + (r < globs % 200 ? 1 : 0)));
      return { match: { commands: [command], paths: Array.from({ length: count }, (_, k) => glob(r * 64 + k)) }, decision: "deny" };
    }),
  };
}

export async function benchPolicy(): Promise<PolicyFigures> {
  const hostile = `${"*a".repeat(255)}!`;
  const command = "a".repeat(8192);
  const path = "a".repeat(4096);
  const commandMs = timed(() => compileCommandPattern(hostile)(command));
  const globMs = timed(() => compileGlob(hostile)(path));
  // The request's own part: long paths, 8,192 characters of command; the rest of the MiB is patterns, split between
  // the draft and the session's policy (each evaluated with its own allowance of work).
  // Eight paths: 64 of them would use up the allowance on their own (working out where they are), and leave the
  // globs nothing to spend.
  const facts: PermissionFacts = {
    kind: "execute",
    title: "",
    command: `${command.slice(1)}!`,
    paths: Array.from({ length: 8 }, (_, k) => `${path.slice(2)}${k}!`),
  };
  const request = { agent: "claude", machine: "laptop", cwd: "/home/ada/app", ...facts };
  const context = { agent: request.agent, machine: request.machine, cwd: request.cwd };
  let left = LIMITS.maxBodyBytes - JSON.stringify({ request }).length;
  const bodyOf = (seed: number) => ({ request, policy: hostilePolicy(left / 2, seed), sessionPolicy: hostilePolicy(left / 2, seed + 1) });
  // Shrunk until the body fits the worker's limit (the JSON's own punctuation is not known in advance).
  while (JSON.stringify(bodyOf(0)).length > LIMITS.maxBodyBytes) left -= 4096;
  const requestBytes = JSON.stringify(bodyOf(0)).length;
  const bodies = Array.from({ length: RUNS + 1 }, (_, i) => bodyOf(2 * i));
  const parsed = bodies.map((b) => [PermissionPolicy.parse(b.policy), PermissionPolicy.parse(b.sessionPolicy)] as const);
  const parseMs = timed((i) => [PermissionPolicy.parse(bodies[i]!.policy), PermissionPolicy.parse(bodies[i]!.sessionPolicy)]);
  const requestColdMs = timed((i) => decidePermission(parsed[i + 1]![0], parsed[i + 1]![1], facts, context));
  const [draft, session] = parsed[0]!;
  decidePermission(draft, session, facts, context);
  const requestMs = timed(() => decidePermission(draft, session, facts, context));
  return { commandMs, globMs, requestMs, requestColdMs, parseMs, requestBytes, runs: RUNS };
}

export function policyReport(f: PolicyFigures): string {
  const ms = ([median, max]: [number, number]) => `${median.toFixed(2)} ms (max ${max.toFixed(2)})`;
  return [
    `Policy matching at its worst (CPU time, ${f.runs} runs each, median and max):`,
    `- one 512-character command pattern on an 8,192-character command: ${ms(f.commandMs)}`,
    `- one 512-character glob on a 4,096-character path (no budget: the per-pattern bound): ${ms(f.globMs)}`,
    `- a policy test request of ${(f.requestBytes / 1024).toFixed(0)} KiB, a draft and a session policy of hostile patterns, compiled before: ${ms(f.requestMs)}`,
    `- the same, every pattern new (compiled in the request): ${ms(f.requestColdMs)}; parsing those two policies (zod, paid before): ${ms(f.parseMs)}`,
    `- ${f.requestMs[0] <= 5 ? "met" : "MISSED"}: a request's matching ≤ 5 ms (median, compiled patterns)`,
  ].join("\n");
}
