/**
 * `npm run bench:scale`: the local runtime (workerd through Miniflare) with N simulated sidecars in
 * this one process, each a real WebSocket speaking the real tunnel protocol (hello, auto-answered
 * pings, `req`/`res` for skills.apply). It measures what an idle machine costs and how the deployment
 * behaves at N machines:
 *   - Durable Object invocations and storage writes per idle machine-hour (read from the objects'
 *     own counters through Miniflare's RPC, which the counters do not count);
 *   - workerd CPU and memory while idle;
 *   - how long a skills change takes to reach all N, and to be recorded for all N;
 *   - how long all N take to reconnect after the worker restarts (as in a deploy);
 *   - GET /v1/machines latency.
 * Prints a table and writes bench/results/scale.json. Loopback only; every wait is bounded.
 *
 * SCALE_MACHINES (default 1000), SCALE_IDLE_SECONDS (default 60), SCALE_HEARTBEAT_MS (default 5000:
 * the product pings every 20 s; a shorter interval only makes the idle window see more pings).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import type { ObjectStats } from "../dev/object-stats";
import { newSecret, ROOT, startWorker, type RunningWorker } from "../dev/runtime";
import { buildAll } from "../scripts/build";
import { PING_FRAME, PONG_FRAME, TUNNEL_PROTOCOL_VERSION } from "@agent-runtime/protocol/frames";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { LATEST_SIDECAR_VERSION } from "@agent-runtime/protocol/version";
import { cpuSeconds, findDescendant, percentile, rssMb } from "./proc";

const N = Number(process.env.SCALE_MACHINES ?? 1000);
const IDLE_SECONDS = Number(process.env.SCALE_IDLE_SECONDS ?? 60);
const HEARTBEAT_MS = Number(process.env.SCALE_HEARTBEAT_MS ?? 5000);
const PRODUCT_HEARTBEAT_MS = 20_000;
const CONNECT_CONCURRENCY = 50;
const RECONNECT_SPREAD_MS = 2_000;

/** An object's counts (dev/instrumented-worker.ts), its invocations summed. */
type Totals = { invocations: number; writes: number };

function totalsOf(stats: ObjectStats): Totals {
  return { invocations: Object.values(stats.invocations).reduce((a, b) => a + b, 0), writes: stats.writes };
}

/** One simulated sidecar: the real frames, none of the real work. */
class SimSidecar {
  ws: WebSocket | null = null;
  welcomed = 0;
  pongs = 0;
  lastSkillsVersion: string | null = null;
  private pinger: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    readonly machine: string,
    private readonly token: string,
    private url: string,
  ) {}

  connect(): Promise<void> {
    return new Promise((resolve) => {
      const ws = new WebSocket(`${this.url.replace(/^http/, "ws")}/_tunnel/${this.machine}`, {
        headers: { authorization: `Bearer ${this.token}` },
        perMessageDeflate: false,
      });
      this.ws = ws;
      ws.on("open", () =>
        ws.send(
          JSON.stringify({
            t: "hello",
            protocol: TUNNEL_PROTOCOL_VERSION,
            machine: this.machine,
            sidecarVersion: LATEST_SIDECAR_VERSION,
            platform: "bench",
            heartbeatMs: HEARTBEAT_MS,
          }),
        ),
      );
      ws.on("message", (data) => {
        const text = data.toString();
        if (text === PONG_FRAME) {
          this.pongs++;
          return;
        }
        const frame = JSON.parse(text) as { t: string; id?: string; op?: string; args?: { version: string } };
        if (frame.t === "welcome") {
          this.welcomed++;
          if (this.pinger) clearInterval(this.pinger);
          this.pinger = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(PING_FRAME), HEARTBEAT_MS);
          resolve();
        } else if (frame.t === "req" && frame.op === "skills.apply") {
          // Like the real sidecar: a version it applied already is answered as unchanged.
          const unchanged = this.lastSkillsVersion === frame.args!.version;
          this.lastSkillsVersion = frame.args!.version;
          ws.send(
            JSON.stringify({
              t: "res",
              id: frame.id,
              ok: true,
              value: { version: frame.args!.version, appliedAtMs: Date.now(), skills: [], perAgent: {}, errors: [], ...(unchanged ? { unchanged } : {}) },
            }),
          );
        }
      });
      ws.on("error", () => undefined);
      ws.on("close", () => {
        if (this.pinger) clearInterval(this.pinger);
        if (this.stopped) return;
        // As the real sidecar does after the worker went away: a random wait within the spread, then redial.
        setTimeout(() => void this.connect(), Math.random() * RECONNECT_SPREAD_MS);
      });
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.pinger) clearInterval(this.pinger);
    this.ws?.terminate();
  }
}

async function waitUntil(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - started;
}

async function inBatches<T>(items: T[], size: number, run: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}

async function machineTotals(worker: RunningWorker, sims: SimSidecar[]): Promise<Totals & { fetch: number; message: number; close: number; rpc: number }> {
  const ns = await worker.mf.getDurableObjectNamespace("MACHINE");
  const totals = { invocations: 0, writes: 0, fetch: 0, message: 0, close: 0, rpc: 0 };
  await inBatches(sims, 100, async (sim) => {
    const s = await (ns.get(ns.idFromName(sim.machine)) as unknown as { debugStats(): Promise<ObjectStats> }).debugStats();
    for (const key of ["fetch", "message", "close", "rpc"] as const) totals[key] += s.invocations[key];
    const sum = totalsOf(s);
    totals.invocations += sum.invocations;
    totals.writes += sum.writes;
  });
  return totals;
}

async function teamTotals(worker: RunningWorker): Promise<Totals> {
  const ns = await worker.mf.getDurableObjectNamespace("TEAM");
  return totalsOf(await (ns.get(ns.idFromName("team")) as unknown as { debugStats(): Promise<ObjectStats> }).debugStats());
}

async function main(): Promise<void> {
  await buildAll();
  const dir = await mkdtemp(join(tmpdir(), "bench-scale-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const persistTo = join(dir, "state");
  let worker = await startWorker({ secrets, persistTo, instrumented: true });
  const port = Number(new URL(worker.url).port);
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${worker.url}${path}`, { ...init, headers: { authorization: `Bearer ${secrets.API_TOKEN}`, "content-type": "application/json", ...init.headers } });
  const sims = await Promise.all(
    Array.from(
      { length: N },
      async (_, i) =>
        new SimSidecar(`sim-${String(i).padStart(5, "0")}`, await mintMachineToken(secrets.TUNNEL_SECRET, `sim-${String(i).padStart(5, "0")}`), worker.url),
    ),
  );
  const figures: Record<string, number | string> = { machines: N, idleSeconds: IDLE_SECONDS, heartbeatMs: HEARTBEAT_MS };
  try {
    process.stderr.write(`connecting ${N} simulated sidecars…\n`);
    const connectStarted = Date.now();
    await inBatches(sims, CONNECT_CONCURRENCY, (sim) => sim.connect());
    figures.connectAllMs = Date.now() - connectStarted;
    const workerd = await findDescendant(process.pid, /workerd/);

    // ---- idle
    process.stderr.write(`idle for ${IDLE_SECONDS} s…\n`);
    await new Promise((r) => setTimeout(r, 2_000)); // let the connect-time skills round settle
    const [machinesBefore, teamBefore, cpuBefore, pongsBefore] = [
      await machineTotals(worker, sims),
      await teamTotals(worker),
      await cpuSeconds(workerd),
      sims.reduce((n, s) => n + s.pongs, 0),
    ];
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const [machinesAfter, teamAfter, cpuAfter, pongsAfter] = [
      await machineTotals(worker, sims),
      await teamTotals(worker),
      await cpuSeconds(workerd),
      sims.reduce((n, s) => n + s.pongs, 0),
    ];
    const machineHours = (N * IDLE_SECONDS) / 3600;
    figures.pingsAnswered = pongsAfter - pongsBefore;
    figures.machineInvocationsPerIdleMachineHour = (machinesAfter.invocations - machinesBefore.invocations) / machineHours;
    figures.teamInvocationsPerIdleMachineHour = (teamAfter.invocations - teamBefore.invocations) / machineHours;
    figures.storageWritesPerIdleMachineHour = (teamAfter.writes - teamBefore.writes + machinesAfter.writes - machinesBefore.writes) / machineHours;
    figures.workerdCpuPercentIdle = Math.round(((cpuAfter - cpuBefore) / IDLE_SECONDS) * 1000) / 10;
    figures.workerdRssMbIdle = await rssMb(workerd);
    figures.pingsPerMachineHourAtProductHeartbeat = 3600_000 / PRODUCT_HEARTBEAT_MS;

    // ---- GET /v1/machines
    const listTimes: number[] = [];
    const pageTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      let t = performance.now();
      const all = (await (await api("/v1/machines?limit=1000")).json()) as { machines: unknown[] };
      listTimes.push(performance.now() - t);
      if (all.machines.length !== Math.min(N, 1000)) throw new Error(`GET /v1/machines listed ${all.machines.length}`);
      t = performance.now();
      await (await api("/v1/machines?limit=100&after=sim-00500")).json();
      pageTimes.push(performance.now() - t);
    }
    figures.listMachines1000P50Ms = Math.round(percentile(listTimes, 50) * 10) / 10;
    figures.listMachinesPage100P50Ms = Math.round(percentile(pageTimes, 50) * 10) / 10;

    // ---- a skills change reaches everyone
    process.stderr.write("changing the team's skills…\n");
    const teamBeforeSkills = await teamTotals(worker);
    const putStarted = Date.now();
    const put = await api("/v1/config/skills", { method: "PUT", body: JSON.stringify({ sources: [{ type: "local", source: "/opt/team-skills" }] }) });
    const version = (put.headers.get("etag") ?? "").replace(/"/g, "");
    await waitUntil(() => sims.every((s) => s.lastSkillsVersion === version), "the skills change to reach every machine", 300_000);
    figures.skillsReachAllMs = Date.now() - putStarted;
    await waitUntil(
      async () => {
        const status = (await (await api("/v1/config/skills/status")).json()) as { machines: { version: string | null }[] };
        return status.machines.filter((m) => m.version === `"${version}"`).length === N;
      },
      "the skills status of every machine",
      300_000,
    );
    figures.skillsRecordedAllMs = Date.now() - putStarted;
    figures.teamWritesPerSkillsChange = (await teamTotals(worker)).writes - teamBeforeSkills.writes;

    // ---- the worker restarts (a deploy): everyone comes back
    process.stderr.write("restarting the worker…\n");
    const welcomedBefore = sims.map((s) => s.welcomed);
    await worker.dispose();
    const restartStarted = Date.now();
    worker = await startWorker({ secrets, persistTo, port, instrumented: true });
    const teamAfterRestart = await teamTotals(worker); // a new instance: counters from zero
    await waitUntil(() => sims.every((s, i) => s.welcomed > welcomedBefore[i]!), "every machine to reconnect", 120_000);
    figures.reconnectAllMs = Date.now() - restartStarted;
    await new Promise((r) => setTimeout(r, 1_000));
    const teamAfterReconnect = await teamTotals(worker);
    figures.teamCallsPerReconnect = Math.round(((teamAfterReconnect.invocations - teamAfterRestart.invocations) / N) * 100) / 100;
    figures.teamWritesPerReconnect = Math.round(((teamAfterReconnect.writes - teamAfterRestart.writes) / N) * 100) / 100;
  } finally {
    for (const sim of sims) sim.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }

  const rows: [string, string][] = [
    ["simulated machines", String(figures.machines)],
    ["connect all (ms)", String(figures.connectAllMs)],
    [`pings answered while idle (${IDLE_SECONDS} s, every ${HEARTBEAT_MS} ms)`, String(figures.pingsAnswered)],
    ["machine-object invocations per idle machine-hour", String(figures.machineInvocationsPerIdleMachineHour)],
    ["team-object invocations per idle machine-hour", String(figures.teamInvocationsPerIdleMachineHour)],
    ["storage writes per idle machine-hour", String(figures.storageWritesPerIdleMachineHour)],
    ["workerd CPU while idle (% of one core)", String(figures.workerdCpuPercentIdle)],
    ["workerd RSS while idle (MB)", String(figures.workerdRssMbIdle)],
    ["GET /v1/machines, 1000 machines, p50 (ms)", String(figures.listMachines1000P50Ms)],
    ["GET /v1/machines, a page of 100, p50 (ms)", String(figures.listMachinesPage100P50Ms)],
    ["skills change reaches all (ms)", String(figures.skillsReachAllMs)],
    ["skills change recorded for all (ms)", String(figures.skillsRecordedAllMs)],
    ["team writes per skills change", String(figures.teamWritesPerSkillsChange)],
    ["all reconnect after a worker restart (ms)", String(figures.reconnectAllMs)],
    ["team calls / writes per reconnect", `${figures.teamCallsPerReconnect} / ${figures.teamWritesPerReconnect}`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`${rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n")}\n`);
  await mkdir(join(ROOT, "bench", "results"), { recursive: true });
  await writeFile(join(ROOT, "bench", "results", "scale.json"), `${JSON.stringify({ atIso: new Date().toISOString(), figures }, null, 2)}\n`);
}

await main();
process.exit(0);
