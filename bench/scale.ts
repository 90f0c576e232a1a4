/**
 * `npm run bench:scale`: the local runtime (workerd through Miniflare) with N simulated sidecars in this
 * one process (bench/scale-sim.ts: real WebSockets speaking the real tunnel protocol, the sidecar's own
 * stream hub, preview proxy and redial rule). It measures, at N machines:
 *   - idle: Durable Object invocations and storage writes per idle machine-hour (the objects' own counters,
 *     read through Miniflare's RPC, which they do not count), workerd CPU and memory;
 *   - GET /v1/machines latency; how long a skills change takes to reach and be recorded for all N;
 *   - busy: of the N, STREAMING stream a session (UPDATES_PER_SECOND `session/update`s each, a reader
 *     following each over SSE), PREVIEWS serve small GETs through a preview, the rest idle; workerd CPU per
 *     streamed update, a probe machine's relay round trip during the load against the same probe alone,
 *     storage writes per session-minute, team-object calls per message and per minute, memory per machine
 *     object, and how busy each process and the machine's cores were (bench/scale-busy.ts);
 *   - where the cores run out: the streams' rate doubled step by step until the readers fall behind or the
 *     cores are all busy, each process's share of them at each step;
 *   - a reconnect storm: the worker restarted (as in a deploy) while the streams run; the time until all N
 *     are connected, the streams resumed and calls made meanwhile answered, and whether any call or update
 *     was lost or repeated; the team object's calls and writes per reconnect.
 * Prints a table and writes bench/results/scale.json. Loopback only; every wait is bounded.
 *
 * SCALE_QUICK=1: 100 machines, 10 s idle, 15 s busy (a minute in all). Each figure can be set on its own:
 * SCALE_MACHINES (1000), SCALE_STREAMING (a tenth), SCALE_PREVIEWS (a hundredth), SCALE_UPDATES_PER_SECOND
 * (50), SCALE_IDLE_SECONDS (60), SCALE_BUSY_SECONDS (60), SCALE_RAMP_SECONDS (10 a step; 0 for none),
 * SCALE_HEARTBEAT_MS (5000: the product pings every 20 s; a shorter interval only makes the idle window see
 * more pings), SCALE_STORM_DOWN_MS (0: how long the worker stays away in the storm before it restarts).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { ObjectStats } from "../dev/object-stats";
import { newSecret, ROOT, startWorker, type RunningWorker } from "../dev/runtime";
import { buildAll } from "../scripts/build";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { cpuSeconds, findDescendant, percentile, rssMb } from "./proc";
import { previewApp } from "./scale-busy";
import { SimSidecar } from "./scale-sim";
import {
  busyRows,
  type BusyFigures,
  type RampStep,
  rampRows,
  readerTally,
  runBusy,
  runRamp,
  runStorm,
  stopReaders,
  stormRows,
  type StormFigures,
} from "./scale-load";

const QUICK = process.env.SCALE_QUICK === "1";
const N = Number(process.env.SCALE_MACHINES ?? (QUICK ? 100 : 1000));
const STREAMING = Number(process.env.SCALE_STREAMING ?? Math.max(1, Math.round(N / 10)));
const PREVIEWS = Number(process.env.SCALE_PREVIEWS ?? Math.max(1, Math.round(N / 100)));
const UPDATES_PER_SECOND = Number(process.env.SCALE_UPDATES_PER_SECOND ?? 50);
const IDLE_SECONDS = Number(process.env.SCALE_IDLE_SECONDS ?? (QUICK ? 10 : 60));
const BUSY_SECONDS = Number(process.env.SCALE_BUSY_SECONDS ?? (QUICK ? 15 : 60));
const HEARTBEAT_MS = Number(process.env.SCALE_HEARTBEAT_MS ?? 5000);
/** Seconds per step of the ramp that finds where the cores run out (0: no ramp). */
const RAMP_SECONDS = Number(process.env.SCALE_RAMP_SECONDS ?? (QUICK ? 4 : 10));
const PRODUCT_HEARTBEAT_MS = 20_000;
const CONNECT_CONCURRENCY = 50;

/** An object's counts (dev/instrumented-worker.ts), its invocations summed. */
type Totals = { invocations: number; writes: number };

function totalsOf(stats: ObjectStats): Totals {
  return { invocations: Object.values(stats.invocations).reduce((a, b) => a + b, 0), writes: stats.writes };
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

type StatsStub = { debugStats(): Promise<ObjectStats> };

/**
 * Each object's stub, made once per worker and kept: Miniflare's proxy frees a stub's handle in workerd when
 * Node collects it, and with a thousand stubs made and dropped per reading, a call could reach a handle freed
 * under it (an assertion in its proxy worker). Kept, the handles live as long as the worker.
 */
const stubs = new WeakMap<RunningWorker, Map<string, StatsStub>>();

async function statsStub(worker: RunningWorker, binding: "MACHINE" | "TEAM", name: string): Promise<StatsStub> {
  const byName = stubs.get(worker) ?? new Map<string, StatsStub>();
  stubs.set(worker, byName);
  const key = `${binding}/${name}`;
  let stub = byName.get(key);
  if (!stub) {
    const ns = await worker.mf.getDurableObjectNamespace(binding);
    stub = ns.get(ns.idFromName(name)) as unknown as StatsStub;
    byName.set(key, stub);
  }
  return stub;
}

async function machineTotals(worker: RunningWorker, sims: SimSidecar[]): Promise<Totals & { fetch: number; message: number; close: number; rpc: number }> {
  const totals = { invocations: 0, writes: 0, fetch: 0, message: 0, close: 0, rpc: 0 };
  await inBatches(sims, 50, async (sim) => {
    const s = await (await statsStub(worker, "MACHINE", sim.machine)).debugStats();
    for (const key of ["fetch", "message", "close", "rpc"] as const) totals[key] += s.invocations[key];
    const sum = totalsOf(s);
    totals.invocations += sum.invocations;
    totals.writes += sum.writes;
  });
  return totals;
}

async function teamTotals(worker: RunningWorker): Promise<Totals> {
  return totalsOf(await (await statsStub(worker, "TEAM", "team")).debugStats());
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
  const app = await previewApp();
  // The first STREAMING machines stream, the next PREVIEWS carry a preview, the rest idle; one more is the probe's.
  const sim = async (machine: string, previewPort?: number) =>
    new SimSidecar({
      machine,
      token: await mintMachineToken(secrets.TUNNEL_SECRET, machine),
      url: () => worker.url,
      heartbeatMs: HEARTBEAT_MS,
      ...(previewPort ? { previewPort } : {}),
    });
  const sims = await Promise.all(
    Array.from({ length: N }, (_, i) => sim(`sim-${String(i).padStart(5, "0")}`, i >= STREAMING && i < STREAMING + PREVIEWS ? app.port : undefined)),
  );
  const probe = await sim("probe");
  const figures: Record<string, number | string> = { machines: N, idleSeconds: IDLE_SECONDS, heartbeatMs: HEARTBEAT_MS };
  let busy: BusyFigures | null = null;
  let storm: StormFigures | null = null;
  let ramp: RampStep[] = [];
  try {
    const workerd = await findDescendant(process.pid, /workerd/);
    const rssBeforeMb = await rssMb(workerd);
    process.stderr.write(`connecting ${N} simulated sidecars…\n`);
    const connectStarted = Date.now();
    await inBatches(sims, CONNECT_CONCURRENCY, (s) => s.connect());
    figures.connectAllMs = Date.now() - connectStarted;
    await probe.connect();

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
    // What one more idle machine holds: workerd's memory with all N connected, over N (its object, its socket).
    figures.workerdKbPerIdleMachine = Math.round(((figures.workerdRssMbIdle - rssBeforeMb) * 1024) / N);
    figures.pingsPerMachineHourAtProductHeartbeat = 3600_000 / PRODUCT_HEARTBEAT_MS;

    // ---- GET /v1/machines
    const listTimes: number[] = [];
    const pageTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      let t = performance.now();
      const all = (await (await api("/v1/machines?limit=1000")).json()) as { machines: unknown[] };
      listTimes.push(performance.now() - t);
      if (all.machines.length !== Math.min(N + 1, 1000)) throw new Error(`GET /v1/machines listed ${all.machines.length}`);
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
        // A reused keep-alive connection the runtime closed meanwhile (ECONNRESET) is asked again, not fatal.
        const status = (await api("/v1/config/skills/status")
          .then((res) => res.json())
          .catch(() => ({ machines: [] }))) as { machines: { version: string | null }[] };
        return status.machines.filter((m) => m.version === `"${version}"`).length === N + 1;
      },
      "the skills status of every machine",
      300_000,
    );
    figures.skillsRecordedAllMs = Date.now() - putStarted;
    figures.teamWritesPerSkillsChange = (await teamTotals(worker)).writes - teamBeforeSkills.writes;

    // ---- busy: streams with readers, previews, a probe; then a reconnect storm in the middle of it
    const load = {
      api,
      worker: () => worker,
      restart: async () => {
        worker = await startWorker({ secrets, persistTo, port, instrumented: true });
        return worker;
      },
      sims,
      streaming: sims.slice(0, STREAMING),
      previews: sims.slice(STREAMING, STREAMING + PREVIEWS),
      previewPort: app.port,
      probe,
      updatesPerSecond: UPDATES_PER_SECOND,
      busySeconds: BUSY_SECONDS,
      machineTotals,
      teamTotals,
      log: (line: string) => process.stderr.write(`${line}\n`),
    };
    busy = await runBusy(load, async () => {
      storm = await runStorm(load);
    });
    if (RAMP_SECONDS > 0) ramp = await runRamp(load, RAMP_SECONDS);
    const tally = readerTally();
    await stopReaders();
    const stormed = storm as StormFigures | null;
    if (!stormed) throw new Error("the storm did not run");
    storm = { ...stormed, lostUpdates: tally.lost, repeatedUpdates: tally.repeated, readerReconnects: tally.reconnects };
    figures.reconnectAllMs = storm.allConnectedMs;
    figures.teamCallsPerReconnect = storm.teamCallsPerReconnect;
    figures.teamWritesPerReconnect = storm.teamWritesPerReconnect;
  } finally {
    for (const s of [...sims, probe]) s.stop();
    app.server.close();
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
    ...busyRows(busy),
    ...stormRows(storm),
    ...rampRows(ramp),
    ["load average (1 min) at the end: others' work on this machine shows here", loadavg()[0]!.toFixed(2)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`${rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n")}\n`);
  await mkdir(join(ROOT, "bench", "results"), { recursive: true });
  await writeFile(
    join(ROOT, "bench", "results", "scale.json"),
    `${JSON.stringify({ atIso: new Date().toISOString(), loadAverage1m: loadavg()[0], figures, busy, storm, ramp }, null, 2)}\n`,
  );
}

await main();
process.exit(0);
