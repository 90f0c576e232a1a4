/**
 * Where a relay round trip's CPU goes, by stage (`BENCH_ONLY=stages npm run bench`, ~1 minute): the worker
 * started with workerd's inspector open, a CPU profile of its isolate (the worker and its Durable Objects)
 * taken over the Chrome DevTools protocol while PROFILED_CALLS round trips run (`initialize` to the mock
 * agent on a running server, as the round-trip bench sends), then every sample's JavaScript frame mapped
 * to the source file it came from (the worker bundle is not minified: esbuild heads each module with a
 * `// path` line) and each file to a stage of the path. The sidecar's and the agent's CPU per call come
 * from /proc over as many calls unprofiled; workerd's CPU per call is split by stage in the proportions
 * of the profile's busy samples (its native code, `(program)`, is a stage of its own).
 *
 * Stage of a sample: the stage of the innermost frame of this project's code (src/, packages/), except
 * that a frame of zod counts as `parse` and one of Hono as `route` wherever they are called from (they
 * are the cost of validating and routing), and samples with no project frame at all go to `runtime`.
 */
import { readFile, writeFile } from "node:fs/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { z } from "zod";
import { newSecret, ROOT, startSidecar, startWorker } from "../dev/runtime";
import { cpuSeconds, findDescendant, findDescendants } from "./proc";

const PROFILED_CALLS = Number(process.env.BENCH_STAGE_CALLS ?? 2000);
const WARM_UP_CALLS = 300;
const ISSUED_TOKEN = process.env.BENCH_STAGE_TOKEN === "issued";
/** Microseconds between samples: fine enough for a ~1 ms call to be seen in pieces. */
const SAMPLING_US = 100;
/** In the scale engineer's port range (the brief's ports): workerd's inspector. */
const INSPECTOR_PORT = Number(process.env.BENCH_INSPECTOR_PORT ?? 27229);

export type Stage =
  | "route"
  | "authentication"
  | "access"
  | "audit"
  | "parse"
  | "object call"
  | "relay (machine object)"
  | "frame"
  | "tunnel"
  | "recorder"
  | "response"
  | "runtime";

/** A module of the worker bundle → its stage (first match wins). */
const STAGE_OF_FILE: [RegExp, Stage][] = [
  [/node_modules\/zod\//, "parse"],
  [/node_modules\/@hono\/zod-openapi|node_modules\/@hono\/zod-validator|node_modules\/hono\/dist\/validator/, "parse"],
  [/node_modules\/hono\/dist\/middleware\/bearer-auth/, "authentication"],
  [/node_modules\/hono\//, "route"],
  [/src\/http\/(auth|bearer|signin|tickets|query-token|cf-access)\.ts|src\/lib\/secrets\.ts|src\/durable\/tokens\//, "authentication"],
  [/src\/http\/access\.ts/, "access"],
  [/src\/http\/audit\.ts|src\/durable\/team\/audit-log\.ts/, "audit"],
  [/src\/http\/(machine|negotiation)\.ts|src\/durable\/stubs\.ts/, "object call"],
  [/src\/lib\/problem-response\.ts|src\/http\/openapi\.ts/, "response"],
  [/packages\/protocol\/src\/frames\.ts|src\/durable\/machine\/tunnel\.ts/, "frame"],
  [/src\/durable\/machine\//, "tunnel"],
  [/src\/durable\/sessions\/|src\/durable\/streams\//, "recorder"],
  [/src\/durable\/acp-transport\/|src\/durable\/policy\//, "relay (machine object)"],
  [/packages\/protocol\//, "parse"],
  [/src\/(app|worker|settings|env)\.ts|src\/routes\/|src\/http\/relay-post\.ts/, "route"],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The bundle's module boundaries: line → the source path esbuild wrote above it. */
export async function moduleLines(bundlePath: string): Promise<{ line: number; path: string }[]> {
  const lines = (await readFile(bundlePath, "utf8")).split("\n");
  const starts: { line: number; path: string }[] = [];
  lines.forEach((text, i) => {
    // A module's path as esbuild wrote it; one reached through a symbolic link is written from where it
    // really is (`../../elsewhere/node_modules/...`): kept from `node_modules/` on.
    const m = /^\/\/ (\S+\.(?:[cm]?js|tsx?))$/.exec(text);
    if (!m) return;
    const path = m[1]!;
    const at = path.lastIndexOf("node_modules/");
    if (at >= 0) starts.push({ line: i, path: path.slice(at) });
    else {
      const ours = /(?:^|\/)((?:src|packages|dev)\/.*)$/.exec(path);
      if (ours) starts.push({ line: i, path: ours[1]! });
    }
  });
  return starts;
}

export function fileAt(starts: { line: number; path: string }[], line: number): string {
  let lo = 0;
  let hi = starts.length - 1;
  let found = "(bundle prelude)";
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid]!.line <= line) {
      found = starts[mid]!.path;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

const isOurs = (file: string) => file.startsWith("src/") || file.startsWith("packages/");

function stageOf(file: string): Stage | null {
  for (const [pattern, stage] of STAGE_OF_FILE) if (pattern.test(file)) return stage;
  return null;
}

/** One CDP session on workerd's inspector: its user isolate's target. */
export async function inspect(port: number): Promise<{ send(method: string, params?: object): Promise<unknown>; close(): void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { id: string; webSocketDebuggerUrl: string }[];
  const target = targets.find((t) => t.id.includes("core:user")) ?? targets[0];
  if (!target) throw new Error("workerd's inspector lists no target");
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let next = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  ws.on("message", (data) => {
    const msg = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
    if (msg.id === undefined) return;
    const w = waiting.get(msg.id);
    waiting.delete(msg.id);
    if (msg.error) w?.reject(new Error(msg.error.message));
    else w?.resolve(msg.result);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

export interface StageFigures {
  calls: number;
  /** The calls carried an issued token (BENCH_STAGE_TOKEN=issued), not the bootstrap API_TOKEN. */
  issuedToken: boolean;
  /** Workerd's CPU per round trip (µs, /proc), without the profiler. */
  workerdCpuUs: number;
  sidecarCpuUs: number;
  agentCpuUs: number;
  /** workerd's CPU per round trip (µs) split by stage in the proportions of the profile's busy samples. */
  stagesUs: Record<string, number>;
  /** The 15 source files (or native functions) with the most self samples, in µs per call as above. */
  filesUs: Record<string, number>;
  /** Of `parse` and `route`: the project function that asked for it (the 12 largest). */
  callersUs: Record<string, number>;
}

export async function benchStages(): Promise<StageFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-stages-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const others = new Set(await findDescendants(process.pid, /workerd/));
  const worker = await startWorker({ secrets, inspectorPort: INSPECTOR_PORT });
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  let id = 1;
  // BENCH_STAGE_TOKEN=issued: the calls carry an issued member token (checked by its own object, or kept by
  // the isolate: docs/architecture.md, "Tokens checked once per isolate") instead of the bootstrap API_TOKEN.
  let bearer = secrets.API_TOKEN;
  const post = async (body: object, query = "") => {
    const res = await fetch(`${worker.url}/machines/local/v1/acp/stages${query}`, {
      method: "POST",
      headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: id++, ...body }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST answered ${res.status}: ${text}`);
  };
  const initialize = () => post({ method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  try {
    await sidecar.connected();
    if (ISSUED_TOKEN) {
      const res = await fetch(`${worker.url}/v1/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${secrets.API_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "stages", role: "member" }),
      });
      if (res.status !== 201) throw new Error(`POST /v1/tokens answered ${res.status}: ${await res.text()}`);
      bearer = z.object({ token: z.string() }).parse(await res.json()).token;
    }
    const workerd = (await findDescendants(process.pid, /workerd/)).find((pid) => !others.has(pid));
    const agentPid = async () => findDescendant(sidecar.child.pid!, /mock-agent/);
    await post({ method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    for (let i = 0; i < WARM_UP_CALLS; i++) await initialize();

    // CPU per call by process, without the profiler.
    const pids = [workerd, sidecar.child.pid, await agentPid()];
    const before = await Promise.all(pids.map(cpuSeconds));
    for (let i = 0; i < PROFILED_CALLS; i++) await initialize();
    const after = await Promise.all(pids.map(cpuSeconds));
    const [workerdCpuUs, sidecarCpuUs, agentCpuUs] = pids.map((_, i) => Math.round(((after[i]! - before[i]!) / PROFILED_CALLS) * 1e6)) as [
      number,
      number,
      number,
    ];

    // The same calls, profiled.
    const cdp = await inspect(INSPECTOR_PORT);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
    await cdp.send("Profiler.start");
    for (let i = 0; i < PROFILED_CALLS; i++) await initialize();
    const { profile } = (await cdp.send("Profiler.stop")) as { profile: Profile };
    cdp.close();
    // BENCH_STAGE_PROFILE=<file>: the raw profile too (a .cpuprofile's JSON), for a look by function rather than by stage.
    if (process.env.BENCH_STAGE_PROFILE) await writeFile(process.env.BENCH_STAGE_PROFILE, JSON.stringify(profile));

    const starts = await moduleLines(join(ROOT, "dist", "worker.js"));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const fileOf = (n: ProfileNode) => (n.callFrame.url.includes("worker.js") ? fileAt(starts, n.callFrame.lineNumber) : "");
    const stageMemo = new Map<number, Stage | "idle" | "gc" | "native">();
    const stageOfNode = (nodeId: number): Stage | "idle" | "gc" | "native" => {
      const memo = stageMemo.get(nodeId);
      if (memo) return memo;
      const leaf = byId.get(nodeId)!;
      let stage: Stage | "idle" | "gc" | "native";
      if (leaf.callFrame.functionName === "(idle)") stage = "idle";
      else if (leaf.callFrame.functionName === "(garbage collector)") stage = "gc";
      else if (leaf.callFrame.functionName === "(program)") stage = "native";
      else {
        stage = "runtime";
        // zod and Hono where they run; otherwise the innermost frame of this project's code.
        for (let at: number | undefined = nodeId; at !== undefined; at = parent.get(at)) {
          const file = fileOf(byId.get(at)!);
          if (!file) continue;
          const s = stageOf(file);
          if (/node_modules\/(zod|hono|@hono)\//.test(file) && s) {
            stage = s;
            break;
          }
          if (isOurs(file) && s) {
            stage = s;
            break;
          }
        }
      }
      stageMemo.set(nodeId, stage);
      return stage;
    };
    // Samples are counted, not their time deltas: on a shared machine a descheduled thread's gap would land
    // on whichever frame happened to be on the stack. A stage's share of the busy samples is then applied
    // to workerd's CPU per call measured without the profiler.
    const stageSamples = new Map<string, number>();
    const fileSamples = new Map<string, number>();
    const callerSamples = new Map<string, number>();
    let busy = 0;
    for (const nodeId of profile.samples) {
      const stage = stageOfNode(nodeId);
      if (stage === "idle") continue;
      busy++;
      const label = stage === "gc" ? "garbage collection" : stage === "native" ? "workerd native code ((program): HTTP, RPC, sockets)" : stage;
      stageSamples.set(label, (stageSamples.get(label) ?? 0) + 1);
      const node = byId.get(nodeId)!;
      const file = fileOf(node) || `${node.callFrame.functionName || "(anonymous)"}${node.callFrame.url ? ` (${node.callFrame.url})` : ""}`;
      fileSamples.set(file, (fileSamples.get(file) ?? 0) + 1);
      if (stage === "parse" || stage === "route") {
        // Who asked for the validation or the routing: the innermost function of this project's code.
        for (let at: number | undefined = nodeId; at !== undefined; at = parent.get(at)) {
          const n = byId.get(at)!;
          const f = fileOf(n);
          if (isOurs(f)) {
            const key = `${stage}: ${f} ${n.callFrame.functionName || "(anonymous)"}`;
            callerSamples.set(key, (callerSamples.get(key) ?? 0) + 1);
            break;
          }
        }
      }
    }
    const share = (n: number) => Math.round((n / busy) * workerdCpuUs * 10) / 10;
    const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
    const stagesUs = Object.fromEntries(sorted(stageSamples).map(([k, v]) => [k, share(v)]));
    const filesUs = Object.fromEntries(
      sorted(fileSamples)
        .slice(0, 15)
        .map(([k, v]) => [k, share(v)]),
    );
    const callersUs = Object.fromEntries(
      sorted(callerSamples)
        .slice(0, 12)
        .map(([k, v]) => [k, share(v)]),
    );
    return { calls: PROFILED_CALLS, issuedToken: ISSUED_TOKEN, workerdCpuUs, sidecarCpuUs, agentCpuUs, stagesUs, filesUs, callersUs };
  } finally {
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

export function stagesReport(f: StageFigures): string {
  const rows = Object.entries(f.stagesUs).map(([stage, us]) => `| ${stage} | ${us.toFixed(1)} |`);
  const files = Object.entries(f.filesUs).map(([file, us]) => `| ${file} | ${us.toFixed(1)} |`);
  return [
    `A relay round trip by stage (${f.calls} calls${f.issuedToken ? ", an issued token" : ""}; CPU µs per call, /proc: workerd ${f.workerdCpuUs}, sidecar ${f.sidecarCpuUs}, agent ${f.agentCpuUs}).`,
    "workerd's CPU split in the proportions of a CPU profile of its isolate (busy samples only):",
    "",
    "| stage (workerd) | µs per call |",
    "|---|---:|",
    ...rows,
    `| sidecar (its whole process, /proc) | ${f.sidecarCpuUs} |`,
    `| agent (its whole process, /proc) | ${f.agentCpuUs} |`,
    "",
    "| source file (workerd JavaScript, self time) | µs per call |",
    "|---|---:|",
    ...files,
    "",
    "| who asked for the validation or routing (innermost project function) | µs per call |",
    "|---|---:|",
    ...Object.entries(f.callersUs).map(([who, us]) => `| ${who} | ${us.toFixed(1)} |`),
  ].join("\n");
}
