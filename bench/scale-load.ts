/**
 * `npm run bench:scale`'s busy window and reconnect storm (bench/scale.ts sets up the worker and the
 * simulated sidecars; bench/scale-busy.ts holds the clients). Figures go to bench/results/scale.json as
 * `busy` and `storm`.
 */
import type { RunningWorker } from "../dev/runtime";
import { cpuSeconds, findDescendant, rssMb } from "./proc";
import { type Api, machineCpu, openBusySession, openPreview, p50p99, Probe, SseFollower, stormCall } from "./scale-busy";
import type { SimSidecar } from "./scale-sim";

type Totals = { invocations: number; writes: number };

const PROBE_PACE_MS = 100;

export interface Load {
  api: Api;
  worker(): RunningWorker;
  /** Start the worker again on the same port and state, after it was disposed (a deploy restarts the objects). */
  restart(): Promise<RunningWorker>;
  sims: SimSidecar[];
  streaming: SimSidecar[];
  previews: SimSidecar[];
  previewPort: number;
  probe: SimSidecar;
  updatesPerSecond: number;
  busySeconds: number;
  machineTotals(worker: RunningWorker, sims: SimSidecar[]): Promise<Totals>;
  teamTotals(worker: RunningWorker): Promise<Totals>;
  log(line: string): void;
}

export interface BusyFigures {
  machines: number;
  streaming: number;
  previews: number;
  /** Per streaming machine, as asked. */
  updatesPerSecond: number;
  /** Updates the simulated agents wrote in the window, and what the readers received of them (all, after the window). */
  updatesWritten: number;
  updatesDelivered: number;
  /** Frames the streaming sidecars sent per update (the hub gathers a stream in full flow): incoming WebSocket messages, as billed. */
  framesPerUpdate: number;
  /** workerd's CPU in the window over the updates streamed in it (everything else it did in the window included). */
  workerdCpuUsPerUpdate: number;
  probeRttP50Ms: number;
  probeRttP99Ms: number;
  probeAloneRttP50Ms: number;
  probeAloneRttP99Ms: number;
  probeCalls: number;
  previewRequests: number;
  /** Preview requests whose keep-alive connection the runtime closed under them (asked again). */
  previewDropped: number;
  previewP50Ms: number;
  /** Storage writes of the streaming machines' objects, per session per minute of streaming. */
  writesPerSessionMinute: number;
  /** Team-object invocations in the window over every message in it (updates, probe calls, preview requests). */
  teamCallsPerMessage: number;
  teamCallsPerMinute: number;
  workerdRssMb: number;
  /** Share of one core used in the window: workerd; this process (the simulated sidecars and every client); the whole machine (of all its cores). */
  workerdCpuPercent: number;
  simulatorCpuPercent: number;
  machineCpuPercent: number;
  cores: number;
}

export interface StormFigures {
  machines: number;
  /** From the restart (the old worker gone) until the new one listened: the local runtime's start, not the storm's. */
  workerStartMs: number;
  /** From the restart (the old worker gone) until every simulated sidecar had its welcome again. */
  allConnectedMs: number;
  /** … until every reader had an update written after the restart. */
  streamsResumedMs: number;
  /** … until every call made at the restart (one per streaming machine) was answered. */
  callsAnsweredMs: number;
  calls: number;
  /** Calls never answered within their deadline. */
  lostCalls: number;
  /** Calls a simulated sidecar ran more than once (counted by JSON-RPC id). */
  repeatedCalls: number;
  /** Over the whole busy window and the storm: updates a reader never got, or got twice (SSE ids checked in order). */
  lostUpdates: number;
  repeatedUpdates: number;
  readerReconnects: number;
  teamCallsPerReconnect: number;
  teamWritesPerReconnect: number;
  /** Dials the worker refused with an HTTP status (429, 503, ...), by status. */
  refusedDials: Record<string, number>;
  /**
   * Where the time went: dials per machine until its welcome (mean, most), and, from the restart, when the
   * last machine made its last dial (the backoff's tail) and the longest wait from a last dial to its
   * welcome (the handshake and the hello's work under load).
   */
  dialsPerMachine: number;
  mostDials: number;
  lastDialMs: number;
  slowestWelcomeMs: number;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const STORM_DOWN_MS = Number(process.env.SCALE_STORM_DOWN_MS ?? 0);

async function waitUntil(check: () => boolean, what: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - started;
}

/** How often the simulated agents write: 50 updates a second come one every 20 ms, as an agent's tokens would. */
const TICK_MS = 20;

/** The streaming machines' agents, writing: `updatesPerSecond` each, spread evenly over the second. */
function startStreaming(load: Load, updatesPerSecond = load.updatesPerSecond): () => void {
  const perTick = (updatesPerSecond * TICK_MS) / 1000;
  let owed = 0;
  const timer = setInterval(() => {
    owed += perTick;
    const now = Math.floor(owed);
    owed -= now;
    for (const sim of load.streaming) sim.stream(now);
  }, TICK_MS);
  return () => clearInterval(timer);
}

let readers: SseFollower[] = [];

/**
 * The busy window: sessions opened and followed, previews opened, the probe measured alone; then
 * `busySeconds` of streaming with the probe and the previews in use, counted; then `during` (the storm)
 * while the streams still run, and the readers' catching up at the end.
 */
export async function runBusy(load: Load, during: () => Promise<void>): Promise<BusyFigures> {
  const { api } = load;
  load.log(`opening ${load.streaming.length} sessions with a reader each, ${load.previews.length} previews…`);
  for (const sim of load.streaming) await openBusySession(api, sim.machine);
  readers = load.streaming.map((sim) => new SseFollower(sim.machine, api));
  for (const reader of readers) reader.start();
  const previewUrls = await Promise.all(load.previews.map((sim) => openPreview(api, sim.machine, load.previewPort)));
  const probe = new Probe(api, load.probe.machine);
  await probe.open();
  await probe.run(100);
  const alone = p50p99(await probe.run(400));

  load.log(`busy for ${load.busySeconds} s: ${load.streaming.length} × ${load.updatesPerSecond} updates/s…`);
  const workerd = await findDescendant(process.pid, /workerd/);
  const worker = load.worker();
  const written = () => sum(load.streaming.map((s) => s.appended));
  const frames = () => sum(load.streaming.map((s) => s.framesSent));
  const before = {
    writes: (await load.machineTotals(worker, load.streaming)).writes,
    team: (await load.teamTotals(worker)).invocations,
    workerd: await cpuSeconds(workerd),
    self: process.cpuUsage(),
    machine: await machineCpu(),
    written: written(),
    frames: frames(),
  };
  const stopStreaming = startStreaming(load);
  const started = Date.now();
  const over = () => Date.now() - started >= load.busySeconds * 1000;
  let previewRequests = 0;
  let previewDropped = 0;
  const previewTimes: number[] = [];
  const previewing = previewUrls.map(async (url) => {
    while (!over()) {
      const t = performance.now();
      // A reused keep-alive connection the runtime closed meanwhile (ECONNRESET, "other side closed") is
      // counted and asked again, not fatal.
      const res = await fetch(`${url}small`).catch((err: Error & { cause?: { code?: string } }) => {
        if (err.cause?.code !== "ECONNRESET" && err.cause?.code !== "UND_ERR_SOCKET") throw err;
        previewDropped++;
        return null;
      });
      if (!res) continue;
      if ((await res.text()) !== "ok") throw new Error(`a preview answered ${res.status}`);
      previewTimes.push(performance.now() - t);
      previewRequests++;
      await new Promise((r) => setTimeout(r, 500));
    }
  });
  // Paced (10 a second): the probe measures the load; it must not be the load.
  const during_ = await probe.run(Number.MAX_SAFE_INTEGER, over, PROBE_PACE_MS);
  await Promise.all(previewing);
  const seconds = (Date.now() - started) / 1000;
  const after = {
    writes: (await load.machineTotals(worker, load.streaming)).writes,
    team: (await load.teamTotals(worker)).invocations,
    workerd: await cpuSeconds(workerd),
    self: process.cpuUsage(before.self),
    machine: await machineCpu(),
    written: written(),
    frames: frames(),
  };
  const rss = await rssMb(workerd);
  const updates = after.written - before.written;
  const messages = updates + during_.length + previewRequests;
  const busy = p50p99(during_);

  await during();
  stopStreaming();
  load.log("waiting for the readers to catch up…");
  await waitUntil(() => readers.every((r, i) => r.lastId >= load.streaming[i]!.appended), "every reader to have every update", 30_000).catch((err: Error) =>
    load.log(err.message),
  );
  const cores = (await import("node:os")).availableParallelism();
  const machineShare = (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total);
  return {
    machines: load.sims.length,
    streaming: load.streaming.length,
    previews: load.previews.length,
    updatesPerSecond: load.updatesPerSecond,
    updatesWritten: sum(load.streaming.map((s) => s.appended)),
    updatesDelivered: sum(readers.map((r) => r.received)),
    framesPerUpdate: Math.round(((after.frames - before.frames) / updates) * 1000) / 1000,
    workerdCpuUsPerUpdate: Math.round(((after.workerd - before.workerd) / updates) * 1e6 * 10) / 10,
    probeRttP50Ms: busy.p50,
    probeRttP99Ms: busy.p99,
    probeAloneRttP50Ms: alone.p50,
    probeAloneRttP99Ms: alone.p99,
    probeCalls: during_.length,
    previewRequests,
    previewDropped,
    previewP50Ms: p50p99(previewTimes).p50,
    writesPerSessionMinute: Math.round(((after.writes - before.writes) / (load.streaming.length * (seconds / 60))) * 10) / 10,
    teamCallsPerMessage: (after.team - before.team) / messages,
    teamCallsPerMinute: Math.round(((after.team - before.team) / (seconds / 60)) * 10) / 10,
    workerdRssMb: rss,
    workerdCpuPercent: Math.round(((after.workerd - before.workerd) / seconds) * 1000) / 10,
    simulatorCpuPercent: Math.round(((after.self.user + after.self.system) / 1e6 / seconds) * 1000) / 10,
    machineCpuPercent: Math.round(machineShare * cores * 1000) / 10,
    cores,
  };
}

/**
 * The worker restarted while the streams run (a deploy restarts every object and ends every socket): the
 * simulated sidecars redial by the sidecar's rule, the readers come back with their last id, and a call
 * made to each streaming machine at the restart is retried until answered.
 */
export async function runStorm(load: Load): Promise<StormFigures> {
  const all = [...load.sims, load.probe];
  load.log(`reconnect storm: restarting the worker under ${all.length} machines…`);
  const welcomedBefore = all.map((s) => s.welcomed);
  const dialsBefore = all.map((s) => s.dials);
  await load.worker().dispose();
  const lastBefore = readers.map((r) => r.lastId);
  const appendedBefore = load.streaming.map((s) => s.appended);
  const started = Date.now();
  // SCALE_STORM_DOWN_MS: the worker stays away that long before it restarts, as a slow restart under load
  // did (12 s at N = 1,000): the sidecars' backoff then reaches its cap, and its tail shows.
  const restarting = new Promise((r) => setTimeout(r, STORM_DOWN_MS)).then(() => load.restart());
  const stormId = (i: number) => `storm-${i}`;
  let answeredAt = 0;
  const calls = Promise.all(load.streaming.map((sim, i) => stormCall(load.api, sim, stormId(i)))).then((answers) => {
    answeredAt = Date.now();
    return answers;
  });
  const worker = await restarting;
  const workerStartMs = Date.now() - started;
  const teamAfterRestart = await load.teamTotals(worker); // a new instance: counters from zero
  const allConnectedMs = await waitUntil(() => all.every((s, i) => s.welcomed > welcomedBefore[i]!), "every machine to reconnect", 120_000).then(
    () => Date.now() - started,
  );
  const streamsResumedMs = await waitUntil(
    () => readers.every((r, i) => r.lastId > Math.max(lastBefore[i]!, appendedBefore[i]!)),
    "every stream to resume",
    120_000,
  ).then(() => Date.now() - started);
  const answers = await calls;
  await new Promise((r) => setTimeout(r, 1_000));
  const teamAfter = await load.teamTotals(worker);
  load.streaming.forEach((sim, i) => {
    const runs = sim.runs.get(`busy/${stormId(i)}`) ?? 0;
    if (runs !== 1 || !answers[i]!.answered) load.log(`storm call ${stormId(i)} on ${sim.machine}: run ${runs} times; tries ${answers[i]!.tries.join(", ")}`);
  });
  const repeatedCalls = sum(load.streaming.map((sim, i) => Math.max(0, (sim.runs.get(`busy/${stormId(i)}`) ?? 0) - 1)));
  const refused: Record<string, number> = {};
  for (const sim of all) for (const [status, n] of sim.refusals) refused[status] = (refused[status] ?? 0) + n;
  return {
    machines: all.length,
    workerStartMs,
    allConnectedMs,
    streamsResumedMs,
    callsAnsweredMs: answeredAt - started,
    calls: answers.length,
    lostCalls: answers.filter((a) => !a.answered).length,
    repeatedCalls,
    // Updates are counted once the readers caught up (bench/scale.ts fills these in after runBusy).
    lostUpdates: 0,
    repeatedUpdates: 0,
    readerReconnects: 0,
    teamCallsPerReconnect: Math.round(((teamAfter.invocations - teamAfterRestart.invocations) / all.length) * 100) / 100,
    teamWritesPerReconnect: Math.round(((teamAfter.writes - teamAfterRestart.writes) / all.length) * 100) / 100,
    refusedDials: refused,
    dialsPerMachine: Math.round((sum(all.map((s, i) => s.dials - dialsBefore[i]!)) / all.length) * 100) / 100,
    mostDials: Math.max(...all.map((s, i) => s.dials - dialsBefore[i]!)),
    lastDialMs: Math.max(...all.map((s) => s.lastDialAtMs)) - started,
    slowestWelcomeMs: Math.max(...all.map((s) => s.welcomedAtMs - s.lastDialAtMs)),
  };
}

/** The readers' tally, once they caught up: updates they never got, or got twice. */
export function readerTally(): { lost: number; repeated: number; reconnects: number } {
  return { lost: sum(readers.map((r) => r.lost)), repeated: sum(readers.map((r) => r.repeated)), reconnects: sum(readers.map((r) => r.reconnects)) };
}

export async function stopReaders(): Promise<void> {
  await Promise.all(readers.map((r) => r.stop()));
}

export interface RampStep {
  /** Per streaming machine. */
  updatesPerSecond: number;
  /** Updates written in the step, per second, and the share of them the readers had by its end. */
  writtenPerSecond: number;
  deliveredShare: number;
  workerdCpuPercent: number;
  simulatorCpuPercent: number;
  machineCpuPercent: number;
  probeRttP50Ms: number;
}

/**
 * Where the cores run out: the streams' rate doubled step by step (`seconds` each) until the readers fall
 * behind (less than 95 % of a step's updates delivered by its end), the machine's cores are all busy, or
 * the rate reaches 1,600 updates a second a stream. Each step says which process took the cores.
 */
export async function runRamp(load: Load, seconds: number): Promise<RampStep[]> {
  const steps: RampStep[] = [];
  const workerd = await findDescendant(process.pid, /workerd/);
  const probe = new Probe(load.api, load.probe.machine);
  const cores = (await import("node:os")).availableParallelism();
  for (let rate = load.updatesPerSecond * 2; rate <= 1600; rate *= 2) {
    load.log(`ramp: ${load.streaming.length} streams × ${rate} updates/s for ${seconds} s…`);
    const written = () => sum(load.streaming.map((s) => s.appended));
    const delivered = () => sum(readers.map((r) => r.received));
    const before = { written: written(), delivered: delivered(), workerd: await cpuSeconds(workerd), self: process.cpuUsage(), machine: await machineCpu() };
    const stop = startStreaming(load, rate);
    const started = Date.now();
    const times = await probe.run(Number.MAX_SAFE_INTEGER, () => Date.now() - started >= seconds * 1000, PROBE_PACE_MS);
    stop();
    const elapsed = (Date.now() - started) / 1000;
    const after = {
      written: written(),
      delivered: delivered(),
      workerd: await cpuSeconds(workerd),
      self: process.cpuUsage(before.self),
      machine: await machineCpu(),
    };
    const step: RampStep = {
      updatesPerSecond: rate,
      writtenPerSecond: Math.round((after.written - before.written) / elapsed),
      deliveredShare: Math.round(((after.delivered - before.delivered) / Math.max(1, after.written - before.written)) * 1000) / 1000,
      workerdCpuPercent: Math.round(((after.workerd - before.workerd) / elapsed) * 1000) / 10,
      simulatorCpuPercent: Math.round(((after.self.user + after.self.system) / 1e6 / elapsed) * 1000) / 10,
      machineCpuPercent: Math.round(((after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total)) * cores * 1000) / 10,
      probeRttP50Ms: p50p99(times).p50,
    };
    steps.push(step);
    // Let the readers catch up before the next step, so that each step starts from the same place.
    await waitUntil(() => readers.every((r, i) => r.lastId >= load.streaming[i]!.appended), "the readers to catch up", 30_000).catch(() => undefined);
    if (step.deliveredShare < 0.95 || step.machineCpuPercent >= cores * 95) break;
  }
  return steps;
}

export function rampRows(steps: RampStep[]): [string, string][] {
  return steps.map((s) => [
    `ramp: ${s.updatesPerSecond}/s a stream (${s.writtenPerSecond}/s in all): delivered in the step; CPU % workerd / simulators / machine; probe p50`,
    `${s.deliveredShare}; ${s.workerdCpuPercent} / ${s.simulatorCpuPercent} / ${s.machineCpuPercent}; ${s.probeRttP50Ms} ms`,
  ]);
}

export function busyRows(b: BusyFigures | null): [string, string][] {
  if (!b) return [];
  return [
    [`busy: ${b.streaming} streaming × ${b.updatesPerSecond}/s with a reader each, ${b.previews} previews, the rest idle`, `${b.machines} machines`],
    ["busy: updates written / delivered to readers", `${b.updatesWritten} / ${b.updatesDelivered}`],
    ["busy: workerd CPU per streamed update (µs); tunnel frames per update", `${b.workerdCpuUsPerUpdate}; ${b.framesPerUpdate}`],
    [
      "busy: probe round trip p50 / p99 (ms), alone → during the load",
      `${b.probeAloneRttP50Ms} / ${b.probeAloneRttP99Ms} → ${b.probeRttP50Ms} / ${b.probeRttP99Ms}`,
    ],
    ["busy: preview small GET p50 (ms); connections dropped under it", `${b.previewP50Ms}; ${b.previewDropped}`],
    ["busy: storage writes per session-minute", String(b.writesPerSessionMinute)],
    ["busy: team-object calls per message / per minute", `${b.teamCallsPerMessage} / ${b.teamCallsPerMinute}`],
    ["busy: workerd RSS (MB)", String(b.workerdRssMb)],
    [
      `busy: CPU, % of one core: workerd / simulators and clients / the machine (${b.cores} cores)`,
      `${b.workerdCpuPercent} / ${b.simulatorCpuPercent} / ${b.machineCpuPercent}`,
    ],
  ];
}

export function stormRows(s: StormFigures | null): [string, string][] {
  if (!s) return [];
  return [
    [
      `storm: ${s.machines} machines after a restart: worker listening / all connected / streams resumed / calls answered (ms)`,
      `${s.workerStartMs} / ${s.allConnectedMs} / ${s.streamsResumedMs} / ${s.callsAnsweredMs}`,
    ],
    [
      `storm: calls (${s.calls}) lost / repeated; updates lost / repeated (readers' redials ${s.readerReconnects})`,
      `${s.lostCalls} / ${s.repeatedCalls}; ${s.lostUpdates} / ${s.repeatedUpdates}`,
    ],
    ["storm: team calls / writes per reconnect", `${s.teamCallsPerReconnect} / ${s.teamWritesPerReconnect}`],
    ["storm: dials refused (by status)", JSON.stringify(s.refusedDials)],
    [
      "storm: dials per machine (mean / most); the last dial, and the slowest welcome after its dial (ms)",
      `${s.dialsPerMachine} / ${s.mostDials}; ${s.lastDialMs} / ${s.slowestWelcomeMs}`,
    ],
  ];
}
