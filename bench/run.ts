/**
 * `npm run bench`: the same mock agent process, reached three ways, measured side by side in one run.
 *   direct         a client speaking ACP over stdio to the mock agent (the physical floor)
 *   sandbox-agent  the reference server of this interface (npm @sandbox-agent/cli-linux-x64), --no-token,
 *                  its `mock` agent process pointed at our mock agent
 *   this project   worker in workerd (Miniflare) → Durable Object → WebSocket tunnel → sidecar → mock agent
 * and, for the two HTTP servers, a 50 MiB file written and read back through /v1/fs/file while their memory is sampled.
 * Prints a table and writes the same figures to bench/results/latest.json. Loopback only; every loop is bounded.
 * The stream, the 1 MiB files and the CPU per round trip are taken in samples alternated with their
 * yardstick's (the direct client's, the floor's), and their ratios made pair by pair (bench/paired.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile, chmod } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client as acpClient, type ClientConnection, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { buildAll } from "../scripts/build";
import type { ObjectStats } from "../dev/object-stats";
import { newSecret, ROOT, startSidecar, startWorker } from "../dev/runtime";
import { cpuSeconds, findDescendant, findDescendants, percentile, privateMb, rssMb } from "./proc";
import { benchSandbox, sandboxReport, sandboxToolsPresent } from "./sandbox";
import { startFloor } from "./floor-process";
import { benchReview, reviewReport } from "./review";
import { chromiumPath } from "./browser";
import { benchFirstVisit, firstVisitReport } from "./first-visit";
import { benchPreview, previewReport } from "./preview";
import { acpTransportReport, benchAcpTransports } from "./acp-transports";
import { benchReconnect, reconnectReport } from "./reconnect";
import { benchNotify, notifyReport } from "./notify";
import { benchStages, stagesReport } from "./stages";
import { benchPolicy, policyReport } from "./policy";
import { attemptsReport, benchAttempts } from "./attempts";
import { alternate, median, type Paired, pairedRatios } from "./paired";

const RTT_CALLS = Number(process.env.BENCH_RTT_CALLS ?? 1000);
const CPU_CALLS = 2000;
const STREAM_EVENTS = Number(process.env.BENCH_STREAM_EVENTS ?? 10_000);
const STREAM_BYTES = 200;
/** How many streams of each setup are taken, alternated with the direct client's (bench/paired.ts). */
const STREAM_ROUNDS = Number(process.env.BENCH_STREAM_ROUNDS ?? 5);
const CONCURRENT = 20;
const COLD_STARTS = 10;
/** How many times the 1 MiB file goes through each server, alternated sample by sample (the median is reported). */
const SMALL_FILE_RUNS = 25;
/** The CPU per round trip is read over blocks of this many calls, the setups' blocks alternated. */
const CPU_BLOCK = 250;
const FILE_BYTES = Number(process.env.BENCH_FILE_MB ?? 50) * 1024 * 1024;
const MOCK_AGENT = join(ROOT, "sidecar", "dist", "mock-agent.js");
const SANDBOX_AGENT_BIN = join(ROOT, "node_modules", "@sandbox-agent", "cli-linux-x64", "bin", "sandbox-agent");

interface RoundTrips {
  rttP50Ms: number;
  rttP99Ms: number;
  /** CPU per round trip by process (µs): this client, then the target's own (server, workerd, sidecar, agent, ...). */
  cpuUsPerCall?: Record<string, number>;
  /** A 1 MiB file written and read back (the median of SMALL_FILE_RUNS), where the target serves files. */
  smallFiles?: SmallFiles;
}

interface SmallFiles {
  writeMs: number;
  readMs: number;
}

interface Figures extends RoundTrips {
  streamMs: number;
  streamMsgsPerSec: number;
  concurrentTotalMs: number;
  concurrentP99Ms: number;
  coldStartMs: number;
  /** of STREAM_EVENTS sent, how many the reader received */
  streamDelivered: number;
  /** of 20 × 200 sent in the concurrency run, how many the readers received */
  concurrentDelivered: number;
  rssIdleMb: Record<string, number>;
  rssLoadedMb: Record<string, number>;
  /** A FILE_BYTES file through PUT/GET /v1/fs/file (HTTP servers only). */
  files?: FileFigures;
  /** Storage rows the session recorder wrote for the STREAM_EVENTS-update stream (this project only). */
  streamStorageRows?: number;
  /** Each of the STREAM_ROUNDS streams (ms) in the order taken; streamMs is their median. */
  streamRunsMs?: number[];
  /** CPU per streamed update by process, this client's included (µs, the median over the rounds). */
  streamCpuUsPerUpdate?: Record<string, number>;
  /** This setup's stream throughput ÷ the direct client's stream of the same round: each round's, and their median. */
  streamVsDirect?: Paired;
  /** This project's ÷ sandbox-agent's stream of the same round. */
  streamVsSandboxAgent?: Paired;
}

/** The stream's figures of a setup (the direct client's too), from its STREAM_ROUNDS streams. */
type StreamFigures = Pick<Figures, "streamMs" | "streamMsgsPerSec" | "streamDelivered" | "streamRunsMs" | "streamCpuUsPerUpdate">;

interface FileFigures {
  /** Why the server refused the file, if it did (then the times are NaN). */
  refused?: string;
  writeMs: number;
  readMs: number;
  /** The same round trip with a 1 MiB file, which every server accepts. */
  smallWriteMs: number;
  smallReadMs: number;
  /** Memory of each process before the transfer, and the most it reached during it (sampled every 20 ms). */
  rssBeforeMb: Record<string, number>;
  rssPeakMb: Record<string, number>;
  /** The same for a file four times as large: a relay that holds whole files grows four times as much. */
  largeRssBeforeMb: Record<string, number>;
  largeRssPeakMb: Record<string, number>;
  /** This project's 1 MiB write and read ÷ the floor's, and ÷ sandbox-agent's, sample of the same round. */
  smallVsFloor?: { write: Paired; read: Paired };
  smallVsSandboxAgent?: { write: Paired; read: Paired };
  /**
   * The same for a file sixteen times as large, moved after the others (hugeFile targets only). The first
   * transfers also warm the process up (V8 frees a piece's buffer at its next collection, not at once, so
   * a heap grows to its working size first); past that, a relay that holds whole files still grows with
   * the file, and one that streams does not.
   */
  hugeRssBeforeMb?: Record<string, number>;
  hugeRssPeakMb?: Record<string, number>;
}

// ---------------------------------------------------------------- helpers

const initialize = (id: number) => ({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
const newSession = (id: number) => ({ jsonrpc: "2.0", id, method: "session/new", params: { cwd: tmpdir(), mcpServers: [] } });
const prompt = (id: number, sessionId: string, text: string) => ({
  jsonrpc: "2.0",
  id,
  method: "session/prompt",
  params: { sessionId, prompt: [{ type: "text", text }] },
});

// ---------------------------------------------------------------- direct stdio

/** The mock agent on stdio, spoken to by the ACP SDK's own client (as any ACP client would). */
class StdioClient {
  readonly child: ChildProcess;
  private readonly connection: ClientConnection;
  notifications = 0;
  private onNotification: (() => void) | null = null;

  constructor() {
    this.child = spawn(process.execPath, [MOCK_AGENT], { stdio: ["pipe", "pipe", "inherit"] });
    const stream = ndJsonStream(
      Writable.toWeb(this.child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(this.child.stdout!) as ReadableStream<Uint8Array>,
    );
    this.connection = acpClient({ name: "bench" })
      .onNotification(methods.client.session.update, () => {
        this.notifications++;
        this.onNotification?.();
      })
      .connect(stream);
  }

  initialize(): Promise<unknown> {
    return this.connection.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  }

  async newSession(): Promise<string> {
    return (await this.connection.agent.request(methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] })).sessionId;
  }

  prompt(sessionId: string, text: string): Promise<unknown> {
    return this.connection.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  }

  untilNotifications(n: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.notifications >= n) {
          this.onNotification = null;
          resolve();
        }
      };
      this.onNotification = check;
      check();
    });
  }

  close(): void {
    this.connection.close();
    this.child.kill();
  }
}

/** The direct client's figures but its stream's (taken later, alternated with the HTTP setups' streams). */
async function benchDirect(): Promise<Omit<Figures, keyof StreamFigures>> {
  const client = new StdioClient();
  await client.initialize();
  const rtts: number[] = [];
  for (let i = 0; i < RTT_CALLS; i++) {
    const t = performance.now();
    await client.initialize();
    rtts.push(performance.now() - t);
  }

  // 20 agent processes, a prompt each, at once.
  const clients = Array.from({ length: CONCURRENT }, () => new StdioClient());
  const sessions = await Promise.all(
    clients.map(async (c) => {
      await c.initialize();
      return c.newSession();
    }),
  );
  const c0 = performance.now();
  const latencies = await Promise.all(
    clients.map(async (c, i) => {
      const t = performance.now();
      await c.prompt(sessions[i]!, "/stream 200 200");
      return performance.now() - t;
    }),
  );
  const concurrentTotalMs = performance.now() - c0;
  const rssLoaded = (await Promise.all(clients.map((c) => rssMb(c.child.pid)))).reduce((a, b) => a + b, 0);
  for (const c of clients) c.close();

  const colds: number[] = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const t = performance.now();
    const c = new StdioClient();
    await c.initialize();
    colds.push(performance.now() - t);
    c.close();
  }
  const agentRss = await rssMb(client.child.pid);
  client.close();
  return {
    rttP50Ms: percentile(rtts, 50),
    rttP99Ms: percentile(rtts, 99),
    concurrentDelivered: CONCURRENT * 200,
    concurrentTotalMs,
    concurrentP99Ms: percentile(latencies, 99),
    coldStartMs: percentile(colds, 50),
    rssIdleMb: { "one agent": agentRss },
    rssLoadedMb: { [`${CONCURRENT} agents`]: Math.round(rssLoaded) },
  };
}

// ---------------------------------------------------------------- over HTTP (sandbox-agent and this project)

interface HttpTarget {
  name: string;
  /** Base URL of `{base_url}` (the /v1 paths hang below it). */
  base: string;
  headers: Record<string, string>;
  rss(): Promise<Record<string, number>>;
  /** The processes a round trip crosses besides this client's own, by role (for the CPU each spends). */
  processes(): Promise<Record<string, number | undefined>>;
  /** Rows the session recorder has written so far (this project: its transcripts are stored, see docs/architecture.md "Sessions"). */
  sessionRowsWritten?(): Promise<number>;
  /** Also move a file sixteen times FILE_BYTES, to see whether memory past its warm-up still follows a file's size. */
  hugeFile?: boolean;
}

async function post(target: HttpTarget, serverId: string, message: unknown, query = ""): Promise<unknown> {
  const res = await fetch(`${target.base}/v1/acp/${serverId}${query}`, {
    method: "POST",
    headers: { ...target.headers, "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(message),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${target.name}: POST ${serverId} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

interface Delivery {
  /** session/update notifications received */
  count: number;
  /** when the last one arrived (performance.now()) */
  lastAt: number;
}

/**
 * Count the prompt's `agent_message_chunk` updates on a server's SSE stream until `n` arrived, or until the
 * stream has been quiet for a second after `quietAfter` resolved (a relay that drops messages
 * never reaches n: what it delivered is reported, not waited for forever).
 */
async function readUpdates(target: HttpTarget, serverId: string, n: number, started: () => void, quietAfter: Promise<unknown>): Promise<Delivery> {
  const controller = new AbortController();
  const res = await fetch(`${target.base}/v1/acp/${serverId}`, { headers: { ...target.headers, accept: "text/event-stream" }, signal: controller.signal });
  if (res.status !== 200) throw new Error(`${target.name}: SSE answered ${res.status}`);
  started();
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const delivery: Delivery = { count: 0, lastAt: performance.now() };
  let tail = "";
  let settled = false;
  void quietAfter.then(
    () => (settled = true),
    () => (settled = true),
  );
  const watchdog = setInterval(() => {
    if (settled && performance.now() - delivery.lastAt > 1000) controller.abort();
  }, 100);
  try {
    while (delivery.count < n) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = tail + decoder.decode(value, { stream: true });
      let from = 0;
      for (;;) {
        const at = text.indexOf("data:", from);
        if (at < 0) break;
        const end = text.indexOf("\n", at);
        if (end < 0) break;
        // The prompt's own updates only: the turn ends with a `usage_update` (the mock's bill), which is
        // not one of the n asked for; counted, it made a stream read in the same chunk "10001 of 10000".
        if (text.slice(at, end).includes('"agent_message_chunk"')) {
          delivery.count++;
          delivery.lastAt = performance.now();
        }
        from = end;
      }
      tail = text.slice(from);
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    clearInterval(watchdog);
    controller.abort();
  }
  return delivery;
}

async function session(target: HttpTarget, serverId: string): Promise<string> {
  await post(target, serverId, initialize(1), "?agent=mock");
  return ((await post(target, serverId, newSession(2))) as { result: { sessionId: string } }).result.sessionId;
}

/**
 * Round trips (a small request → response over the whole relay) of every target, interleaved in blocks of
 * 50, so that whatever drifts during a run (the machine, this client's own heap) weighs on all alike: run
 * one after the other, the last target measured paid for everything the first ones left behind.
 */
async function roundTrips(targets: HttpTarget[]): Promise<Map<HttpTarget, RoundTrips>> {
  const rtts = new Map(targets.map((t) => [t, [] as number[]]));
  for (const target of targets) await session(target, "rtt");
  for (let done = 0; done < RTT_CALLS; done += 50) {
    for (const target of targets) {
      for (let i = done; i < Math.min(RTT_CALLS, done + 50); i++) {
        const t = performance.now();
        await post(target, "rtt", initialize(10 + i));
        rtts.get(target)!.push(performance.now() - t);
      }
    }
  }
  const cpu = await cpuPerRoundTrip(targets);
  const figures = new Map<HttpTarget, RoundTrips>();
  for (const target of targets) {
    const times = rtts.get(target)!;
    figures.set(target, { rttP50Ms: percentile(times, 50), rttP99Ms: percentile(times, 99), cpuUsPerCall: cpu.get(target)! });
  }
  console.error("bench:   round trips done");
  return figures;
}

/**
 * Where a round trip's time goes: the CPU (user + system) each process on its path spends per call, over
 * CPU_CALLS calls, read from /proc. On this benchmark's two cores a lone round trip is serial, so the sum of
 * these is close to its wall time; this client's own share is the same for every target. The calls go in
 * blocks of CPU_BLOCK, the setups' blocks alternated (bench/paired.ts), so that the machine's moments weigh
 * on every setup alike (one setup's 2,000 calls after another's put the floor at 415 µs in one run and 625
 * in the next); each process's CPU is counted over its own setup's blocks only.
 */
async function cpuPerRoundTrip(targets: HttpTarget[]): Promise<Map<HttpTarget, Record<string, number>>> {
  const processes = await Promise.all(targets.map(async (target) => Object.entries({ client: process.pid, ...(await target.processes()) })));
  const blocks = await alternate(
    Math.ceil(CPU_CALLS / CPU_BLOCK),
    0,
    targets.map((target, t) => async (block: number) => {
      const pids = processes[t]!.map(([, pid]) => pid);
      const before = await Promise.all(pids.map((pid) => cpuSeconds(pid)));
      for (let i = block * CPU_BLOCK; i < Math.min(CPU_CALLS, (block + 1) * CPU_BLOCK); i++) await post(target, "rtt", initialize(100_000 + i));
      const after = await Promise.all(pids.map((pid) => cpuSeconds(pid)));
      return after.map((seconds, k) => seconds - before[k]!);
    }),
  );
  return new Map(
    targets.map((target, t) => [
      target,
      Object.fromEntries(processes[t]!.map(([role], k) => [role, Math.round((blocks[t]!.reduce((sum, used) => sum + used[k]!, 0) / CPU_CALLS) * 1e6)])),
    ]),
  );
}

/** Streaming: STREAM_EVENTS session/update notifications of one prompt on server `serverId`, until the SSE reader has them all. */
async function streamThrough(target: HttpTarget, serverId: string): Promise<{ streamMs: number; delivered: { count: number; lastAt: number } }> {
  const sid = await session(target, serverId);
  let readerUp!: () => void;
  const up = new Promise<void>((r) => (readerUp = r));
  let promptDone!: Promise<unknown>;
  let promptSent!: () => void;
  const sent = new Promise<void>((r) => (promptSent = r));
  const reading = readUpdates(
    target,
    serverId,
    STREAM_EVENTS,
    readerUp,
    sent.then(() => promptDone),
  );
  await up;
  const t0 = performance.now();
  promptDone = post(target, serverId, prompt(3, sid, `/stream ${STREAM_EVENTS} ${STREAM_BYTES}`));
  promptSent();
  const delivered = await reading;
  const streamMs = delivered.lastAt - t0;
  await promptDone;
  return { streamMs, delivered };
}

/** STREAM_EVENTS updates of one prompt read off the agent's own stdio by the SDK's client (ms). */
async function streamOnStdio(client: StdioClient): Promise<number> {
  const session = await client.newSession();
  client.notifications = 0;
  const t0 = performance.now();
  const done = client.prompt(session, `/stream ${STREAM_EVENTS} ${STREAM_BYTES}`);
  await client.untilNotifications(STREAM_EVENTS);
  const streamMs = performance.now() - t0;
  await done;
  return streamMs;
}

/** The direct client's stream alone, on an agent of its own; with the CPU its agent and this client spent per update (µs). */
async function directStream(): Promise<{ streamMs: number; cpu: { agent: number; client: number } }> {
  const client = new StdioClient();
  await client.initialize();
  try {
    const [agentBefore, clientBefore] = [await cpuSeconds(client.child.pid), process.cpuUsage()];
    const streamMs = await streamOnStdio(client);
    const clientUsed = process.cpuUsage(clientBefore);
    const agent = ((await cpuSeconds(client.child.pid)) - agentBefore) * 1e6;
    return { streamMs, cpu: { agent: agent / STREAM_EVENTS, client: (clientUsed.user + clientUsed.system) / STREAM_EVENTS } };
  } finally {
    client.close();
  }
}

/** One stream of a setup: its time, the updates delivered, and the CPU per update by process (µs). */
interface StreamSample {
  streamMs: number;
  delivered: number;
  cpuUsPerUpdate: Record<string, number>;
}

/**
 * STREAM_EVENTS-update streams, rounds `first` to `end - 1` of them a setup: the direct client's and each
 * target's, alternated round by round (bench/paired.ts), each target's on a server of its own. Round 0's is
 * named `stream` and left up (the memory figures are taken with it, as with a single stream's server); the
 * later rounds' are deleted after them: the sidecar keeps an ended server's messages for two minutes (for
 * readers catching up), so a full run takes those rounds after its memory figures. Returns the direct
 * client's samples first, then each target's, in round order.
 */
async function alternatedStreams(targets: HttpTarget[], first: number, end: number): Promise<StreamSample[][]> {
  const serverId = (round: number) => (round === 0 ? "stream" : `stream${round}`);
  const samples = await alternate(end - first, first, [
    async (): Promise<StreamSample> => {
      const { streamMs, cpu } = await directStream();
      return { streamMs, delivered: STREAM_EVENTS, cpuUsPerUpdate: cpu };
    },
    ...targets.map((target) => async (round: number): Promise<StreamSample> => {
      // The relay's processes (the agent is the stream's own, started by it: not among them).
      const processes = Object.entries(await target.processes()).filter((entry): entry is [string, number] => entry[0] !== "agent" && entry[1] !== undefined);
      const before = await Promise.all(processes.map(([, pid]) => cpuSeconds(pid)));
      const clientBefore = process.cpuUsage();
      const { streamMs, delivered } = await streamThrough(target, serverId(round));
      const clientUsed = process.cpuUsage(clientBefore);
      const after = await Promise.all(processes.map(([, pid]) => cpuSeconds(pid)));
      return {
        streamMs,
        delivered: delivered.count,
        cpuUsPerUpdate: {
          ...Object.fromEntries(processes.map(([role], j) => [role, ((after[j]! - before[j]!) / STREAM_EVENTS) * 1e6])),
          client: (clientUsed.user + clientUsed.system) / STREAM_EVENTS,
        },
      };
    }),
  ]);
  for (const target of targets) {
    for (let round = Math.max(first, 1); round < end; round++) await deleteServer(target, serverId(round));
  }
  return samples;
}

/** A setup's figures from its streams: the median time and throughput, the fewest updates delivered, the median CPU. */
function streamFigures(samples: StreamSample[]): StreamFigures {
  const roles = [...new Set(samples.flatMap((s) => Object.keys(s.cpuUsPerUpdate)))];
  const streamMs = median(samples.map((s) => s.streamMs));
  return {
    streamMs,
    streamMsgsPerSec: median(samples.map(updatesPerSecond)),
    streamDelivered: Math.min(...samples.map((s) => s.delivered)),
    streamRunsMs: samples.map((s) => s.streamMs),
    streamCpuUsPerUpdate: Object.fromEntries(roles.map((role) => [role, median(samples.map((s) => s.cpuUsPerUpdate[role] ?? Number.NaN))])),
  };
}

/** Updates delivered per second. */
const updatesPerSecond = (s: StreamSample) => s.delivered / (s.streamMs / 1000);

/** Each round's throughput ÷ the other setup's in the same round. */
const streamRatios = (a: StreamSample[], b: StreamSample[]) => pairedRatios(a.map(updatesPerSecond), b.map(updatesPerSecond));

async function deleteServer(target: HttpTarget, id: string): Promise<void> {
  // Best effort, as acp-http-client does it: a DELETE that hangs must not hang the benchmark.
  await fetch(`${target.base}/v1/acp/${id}`, { method: "DELETE", headers: target.headers, signal: AbortSignal.timeout(2000) }).catch(() => undefined);
}

/** The servers this benchmark starts on an HTTP setup (deleted at the end of its steps). */
const SERVER_IDS = ["rtt", "stream", ...Array.from({ length: CONCURRENT }, (_, i) => `c${i}`), ...Array.from({ length: COLD_STARTS }, (_, i) => `cold${i}`)];

/**
 * Memory idle (after the round trips and round 0's stream), 20 servers streaming at once, cold starts. The
 * round trips, the streams and the files are taken apart, alternated with the other setups'.
 */
async function benchServers(
  target: HttpTarget,
): Promise<Pick<Figures, "concurrentDelivered" | "concurrentTotalMs" | "concurrentP99Ms" | "coldStartMs" | "rssIdleMb" | "rssLoadedMb">> {
  const rssIdle = await target.rss();

  // Concurrency: 20 ACP servers with a prompt each at once (each reads its stream too).
  const ids = Array.from({ length: CONCURRENT }, (_, i) => `c${i}`);
  const sessions = await Promise.all(ids.map((id) => session(target, id)));
  const c0 = performance.now();
  let delivered200 = 0;
  const latencies = await Promise.all(
    ids.map(async (id, i) => {
      let ready!: () => void;
      const open = new Promise<void>((r) => (ready = r));
      let answered!: Promise<unknown>;
      let go!: () => void;
      const sentPrompt = new Promise<void>((r) => (go = r));
      const events = readUpdates(
        target,
        id,
        200,
        ready,
        sentPrompt.then(() => answered),
      );
      await open;
      const t = performance.now();
      answered = post(target, id, prompt(3, sessions[i]!, "/stream 200 200"));
      go();
      await answered;
      const got = await events;
      delivered200 += got.count;
      return got.lastAt - t;
    }),
  );
  const concurrentTotalMs = performance.now() - c0;
  const rssLoaded = await target.rss();
  console.error(`bench:   ${target.name}: concurrency done`);

  // Cold start: POST ?agent=mock on a new server id until the first response.
  const colds: number[] = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const t = performance.now();
    await post(target, `cold${i}`, initialize(1), "?agent=mock");
    colds.push(performance.now() - t);
  }

  console.error(`bench:   ${target.name}: cold starts done`);
  return {
    concurrentDelivered: delivered200,
    concurrentTotalMs,
    concurrentP99Ms: percentile(latencies, 99),
    coldStartMs: percentile(colds, 50),
    rssIdleMb: rssIdle,
    rssLoadedMb: rssLoaded,
  };
}

/** A random file of `size` bytes written with PUT /v1/fs/file into `dir` and read back with GET, compared byte for byte. */
async function fileRoundTrip(target: HttpTarget, dir: string, size: number): Promise<{ writeMs: number; readMs: number } | { refused: string }> {
  const bytes = randomBytes(size);
  const url = `${target.base}/v1/fs/file?path=${encodeURIComponent(join(dir, `file-${size}.bin`))}`;
  const t0 = performance.now();
  const put = await fetch(url, { method: "PUT", headers: { ...target.headers, "content-type": "application/octet-stream" }, body: bytes }).catch(
    (err: Error) => new Error(`the connection was closed (${(err.cause as Error | undefined)?.message ?? err.message})`),
  );
  if (put instanceof Error) return { refused: put.message };
  const answer = await put.text();
  if (!put.ok) return { refused: `${put.status}: ${answer.slice(0, 120)}` };
  const writeMs = performance.now() - t0;
  const t1 = performance.now();
  const back = Buffer.from(await (await fetch(url, { headers: target.headers })).arrayBuffer());
  const readMs = performance.now() - t1;
  if (!back.equals(bytes)) throw new Error(`${target.name}: the file read back differs from the one written`);
  return { writeMs, readMs };
}

/** Each 1 MiB round trip of a setup, in the order taken (ms). */
interface SmallSamples {
  writes: number[];
  reads: number[];
}

/**
 * A 1 MiB file's round trip is a few milliseconds, so one disturbance moves a sample: SMALL_FILE_RUNS of
 * them a setup, the setups' alternated sample by sample (bench/paired.ts), each into a folder of its own.
 */
async function alternatedSmallFiles(targets: HttpTarget[]): Promise<SmallSamples[]> {
  const dirs = await Promise.all(targets.map(() => mkdtemp(join(tmpdir(), "bench-small-files-"))));
  try {
    const samples = await alternate(
      SMALL_FILE_RUNS,
      0,
      targets.map((target, t) => async () => {
        const run = await fileRoundTrip(target, dirs[t]!, 1024 * 1024);
        if ("refused" in run) throw new Error(`${target.name}: refused a 1 MiB file (${run.refused})`);
        return run;
      }),
    );
    return samples.map((runs) => ({ writes: runs.map((r) => r.writeMs), reads: runs.map((r) => r.readMs) }));
  } finally {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
}

/** A setup's 1 MiB figures: the median write and read of its samples. */
function smallMedians(samples: SmallSamples): SmallFiles {
  return { writeMs: percentile(samples.writes, 50), readMs: percentile(samples.reads, 50) };
}

/** A setup's 1 MiB figures as FileFigures carries them. */
function smallFields(samples: SmallSamples): Pick<FileFigures, "smallWriteMs" | "smallReadMs"> {
  const { writeMs, readMs } = smallMedians(samples);
  return { smallWriteMs: writeMs, smallReadMs: readMs };
}

/** Each round's write and read ÷ the other setup's in the same round. */
function smallRatios(a: SmallSamples, b: SmallSamples): { write: Paired; read: Paired } {
  return { write: pairedRatios(a.writes, b.writes), read: pairedRatios(a.reads, b.reads) };
}

/**
 * A FILE_BYTES random file written with PUT /v1/fs/file and read back with GET, compared byte for byte,
 * while the server's processes are sampled: a relay that buffers whole files shows it in its peak. The
 * 1 MiB figures (`small`) were taken before, alternated with the other setups'.
 */
async function benchFiles(
  target: HttpTarget,
  small: Pick<FileFigures, "smallWriteMs" | "smallReadMs" | "smallVsFloor" | "smallVsSandboxAgent">,
): Promise<FileFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-files-"));
  const roundTrip = (size: number) => fileRoundTrip(target, dir, size);
  try {
    const sampled = async (size: number) => {
      const before = await target.rss();
      const peak = { ...before };
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          for (const [name, mb] of Object.entries(await target.rss())) peak[name] = Math.max(peak[name] ?? 0, mb);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const result = await roundTrip(size).finally(() => {
        sampling = false;
      });
      await sampler;
      return { result, before, peak };
    };
    const big = await sampled(FILE_BYTES);
    const large = await sampled(4 * FILE_BYTES);
    const huge = target.hugeFile ? await sampled(16 * FILE_BYTES) : null;
    return {
      ...("refused" in big.result ? { refused: big.result.refused, writeMs: Number.NaN, readMs: Number.NaN } : big.result),
      ...small,
      rssBeforeMb: big.before,
      rssPeakMb: big.peak,
      largeRssBeforeMb: large.before,
      largeRssPeakMb: large.peak,
      ...(huge ? { hugeRssBeforeMb: huge.before, hugeRssPeakMb: huge.peak } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Storage rows the session recorder writes for the STREAM_EVENTS-update stream, counted by the instrumented
 * worker in a runtime of its own (the timed runs use the worker as deployed).
 */
async function recordedStreamRows(): Promise<number> {
  return withThisProject(async (target) => {
    const sid = await session(target, "stream");
    const before = await target.sessionRowsWritten!();
    await post(target, "stream", prompt(3, sid, `/stream ${STREAM_EVENTS} ${STREAM_BYTES}`));
    // The turn's end writes what the recorder held: everything the stream cost in storage is counted now.
    return (await target.sessionRowsWritten!()) - before;
  }, true);
}

async function waitHealthy(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`${url}/v1/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

async function withSandboxAgent<T>(run: (target: HttpTarget) => Promise<T>): Promise<T> {
  const home = await mkdtemp(join(tmpdir(), "bench-sandbox-agent-"));
  // Its mock agent process, pointed at ours: both servers relay the very same program.
  const launchers = join(home, ".local", "share", "sandbox-agent", "bin", "agent_processes");
  await mkdir(launchers, { recursive: true });
  await writeFile(join(launchers, "mock-acp"), `#!/bin/sh\nexec "${process.execPath}" "${MOCK_AGENT}" "$@"\n`);
  await chmod(join(launchers, "mock-acp"), 0o755);
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(SANDBOX_AGENT_BIN, ["server", "--no-token", "--no-telemetry", "-H", "127.0.0.1", "-p", String(port)], {
    env: { ...process.env, HOME: home },
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitHealthy(base);
    return await run({
      name: "sandbox-agent",
      base,
      headers: {},
      rss: async () => ({ server: await rssMb(child.pid), "server private": await privateMb(child.pid) }),
      processes: async () => ({ server: child.pid, agent: await findDescendant(child.pid!, /mock-agent/) }),
    });
  } finally {
    child.kill("SIGTERM");
    await rm(home, { recursive: true, force: true });
  }
}

/** `instrumented`: the worker whose objects count their storage writes (dev/instrumented-worker.ts), never the one timed. */
async function withThisProject<T>(run: (target: HttpTarget) => Promise<T>, instrumented = false): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "bench-agent-runtime-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  // The floor's workerd may be running too: this project's is the one that was not there before.
  const others = new Set(await findDescendants(process.pid, /workerd/));
  const worker = await startWorker({ secrets, instrumented });
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  try {
    await sidecar.connected();
    const workerd = (await findDescendants(process.pid, /workerd/)).find((pid) => !others.has(pid));
    return await run({
      name: "this project",
      base: `${worker.url}/machines/local`,
      headers: { authorization: `Bearer ${secrets.API_TOKEN}` },
      rss: async () => ({ sidecar: await rssMb(sidecar.child.pid), "sidecar private": await privateMb(sidecar.child.pid), workerd: await rssMb(workerd) }),
      processes: async () => ({ workerd, sidecar: sidecar.child.pid, agent: await findDescendant(sidecar.child.pid!, /mock-agent/) }),
      hugeFile: true,
      sessionRowsWritten: instrumented
        ? async () => {
            const ns = await worker.mf.getDurableObjectNamespace("MACHINE");
            const stub = ns.get(ns.idFromName("local")) as unknown as { debugStats(): Promise<ObjectStats> };
            return (await stub.debugStats()).writes;
          }
        : undefined,
    });
  } finally {
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The floor of this architecture (bench/floor/): a minimal worker, Durable Object, hibernatable WebSocket
 * and relay process in front of the same mock agent. Only round trips are measured through it: what this
 * project costs above it is its own code; what the floor costs above sandbox-agent is the architecture.
 */
async function withFloor<T>(run: (target: HttpTarget) => Promise<T>): Promise<T> {
  const floor = await startFloor();
  try {
    return await run({
      name: "floor",
      base: floor.base,
      headers: {},
      rss: async () => ({}),
      processes: async () => ({ workerd: floor.workerd, relay: floor.relayPid, agent: await findDescendant(floor.relayPid, /mock-agent/) }),
    });
  } finally {
    await floor.dispose();
  }
}

// ---------------------------------------------------------------- report

/** What this project adds over the floor of its architecture: latency, and the CPU of its two processes (ms). */
function addedOverFloor(ours: RoundTrips, floor: RoundTrips): { addedMs: number; addedCpuMs: number } {
  const cpuSum = (f: RoundTrips, roles: string[]) => roles.reduce((sum, role) => sum + (f.cpuUsPerCall?.[role] ?? Number.NaN), 0);
  return { addedMs: ours.rttP50Ms - floor.rttP50Ms, addedCpuMs: (cpuSum(ours, ["workerd", "sidecar"]) - cpuSum(floor, ["workerd", "relay"])) / 1000 };
}

function fmt(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "n/a";
}

function report(direct: Figures, reference: Figures, floor: RoundTrips, ours: Figures): string {
  const rows: [string, (f: Figures) => number, "lower" | "higher", number][] = [
    ["round trip p50 (ms)", (f) => f.rttP50Ms, "lower", 3],
    ["round trip p99 (ms)", (f) => f.rttP99Ms, "lower", 3],
    [`stream ${STREAM_EVENTS} updates (ms)`, (f) => f.streamMs, "lower", 0],
    ["stream throughput (msg/s)", (f) => f.streamMsgsPerSec, "higher", 0],
    [`stream updates delivered (of ${STREAM_EVENTS})`, (f) => f.streamDelivered, "higher", 0],
    [`${CONCURRENT} servers: updates delivered (of ${CONCURRENT * 200})`, (f) => f.concurrentDelivered, "higher", 0],
    [`${CONCURRENT} servers at once, total (ms)`, (f) => f.concurrentTotalMs, "lower", 0],
    [`${CONCURRENT} servers at once, p99 (ms)`, (f) => f.concurrentP99Ms, "lower", 0],
    ["cold start to first response p50 (ms)", (f) => f.coldStartMs, "lower", 1],
  ];
  const lines = [`| figure | direct stdio | sandbox-agent | this project | ÷ direct | ÷ sandbox-agent |`, `|---|---:|---:|---:|---:|---:|`];
  for (const [name, get, , digits] of rows) {
    lines.push(
      `| ${name} | ${fmt(get(direct), digits)} | ${fmt(get(reference), digits)} | ${fmt(get(ours), digits)} | ${fmt(get(ours) / get(direct))}× | ${fmt(get(ours) / get(reference))}× |`,
    );
  }
  lines.push(
    "",
    "| round trips against the floor of this architecture (bench/floor/) | sandbox-agent | floor | this project | floor ÷ sandbox-agent | this project ÷ floor |",
    "|---|---:|---:|---:|---:|---:|",
  );
  for (const [name, get] of [
    ["round trip p50 (ms)", (f: RoundTrips) => f.rttP50Ms],
    ["round trip p99 (ms)", (f: RoundTrips) => f.rttP99Ms],
  ] as const) {
    lines.push(
      `| ${name} | ${fmt(get(reference), 3)} | ${fmt(get(floor), 3)} | ${fmt(get(ours), 3)} | ${fmt(get(floor) / get(reference))}× | ${fmt(get(ours) / get(floor))}× |`,
    );
  }
  const cpu = (f: RoundTrips) =>
    f.cpuUsPerCall
      ? Object.entries(f.cpuUsPerCall)
          .map(([role, us]) => `${role} ${us}`)
          .join(", ")
      : "n/a";
  lines.push(`| CPU per round trip (µs, by process) | ${cpu(reference)} | ${cpu(floor)} | ${cpu(ours)} | | |`);
  for (const [name, get] of [
    ["write a 1 MiB file (ms)", (f: Figures | RoundTrips) => ("files" in f ? f.files?.smallWriteMs : f.smallFiles?.writeMs) ?? Number.NaN],
    ["read a 1 MiB file (ms)", (f: Figures | RoundTrips) => ("files" in f ? f.files?.smallReadMs : f.smallFiles?.readMs) ?? Number.NaN],
  ] as const) {
    lines.push(
      `| ${name} | ${fmt(get(reference))} | ${fmt(get(floor))} | ${fmt(get(ours))} | ${fmt(get(floor) / get(reference))}× | ${fmt(get(ours) / get(floor))}× |`,
    );
  }
  lines.push(
    "",
    `| sessions: the ${STREAM_EVENTS}-update stream recorded in its transcript | this project |`,
    "|---|---:|",
    `| storage rows written (entries, records, cursors; batched, not one per update) | ${ours.streamStorageRows ?? "n/a"} |`,
  );
  // The ratios taken in pairs (bench/paired.ts): each sample of ours against the yardstick's of the same round.
  const range = (p: Paired | undefined) => (p ? `${fmt(Math.min(...p.ratios))}–${fmt(Math.max(...p.ratios))}×` : "n/a");
  const pairedRows: [string, Paired | undefined][] = [
    [`stream throughput ÷ the direct client's (${ours.streamVsDirect?.ratios.length ?? 0} pairs)`, ours.streamVsDirect],
    [`stream throughput ÷ sandbox-agent's (${ours.streamVsSandboxAgent?.ratios.length ?? 0} pairs)`, ours.streamVsSandboxAgent],
    [`sandbox-agent's stream throughput ÷ the direct client's (${reference.streamVsDirect?.ratios.length ?? 0} pairs)`, reference.streamVsDirect],
    [`1 MiB write ÷ the floor's (${ours.files?.smallVsFloor?.write.ratios.length ?? 0} pairs)`, ours.files?.smallVsFloor?.write],
    ["1 MiB read ÷ the floor's", ours.files?.smallVsFloor?.read],
    ["1 MiB write ÷ sandbox-agent's", ours.files?.smallVsSandboxAgent?.write],
    ["1 MiB read ÷ sandbox-agent's", ours.files?.smallVsSandboxAgent?.read],
  ];
  lines.push(
    "",
    "| this project, paired in time with the yardstick (samples alternated) | median of the pairs' ratios | range |",
    "|---|---:|---:|",
    ...pairedRows.map(([name, p]) => `| ${name} | ${p ? `${fmt(p.median)}×` : "n/a"} | ${range(p)} |`),
  );
  const mb = FILE_BYTES / 2 ** 20;
  const fileRows: [string, (f: FileFigures) => number][] = [
    ["write a 1 MiB file (ms)", (f) => f.smallWriteMs],
    ["read it back (ms)", (f) => f.smallReadMs],
    [`write a ${mb} MiB file (ms)`, (f) => f.writeMs],
    [`read it back (ms)`, (f) => f.readMs],
    [`${mb} MiB write throughput (MiB/s)`, (f) => mb / (f.writeMs / 1000)],
    [`${mb} MiB read throughput (MiB/s)`, (f) => mb / (f.readMs / 1000)],
  ];
  lines.push("", `| files through /v1/fs/file | sandbox-agent | this project | ÷ sandbox-agent |`, "|---|---:|---:|---:|");
  for (const [name, get] of fileRows) {
    const a = reference.files ? get(reference.files) : Number.NaN;
    const b = ours.files ? get(ours.files) : Number.NaN;
    lines.push(`| ${name} | ${fmt(a, 0)} | ${fmt(b, 0)} | ${fmt(b / a)}× |`);
  }
  const growth = (before: Record<string, number> | undefined, peak: Record<string, number> | undefined) =>
    before && peak
      ? Object.keys(peak)
          .filter((k) => !k.includes("private"))
          .map((k) => `${k} ${fmt(before[k] ?? Number.NaN, 1)} → ${fmt(peak[k] ?? Number.NaN, 1)}`)
          .join(", ")
      : "n/a";
  lines.push(
    `| memory during the ${mb} MiB transfer (RSS MB, before → peak) | ${growth(reference.files?.rssBeforeMb, reference.files?.rssPeakMb)} | ${growth(ours.files?.rssBeforeMb, ours.files?.rssPeakMb)} | |`,
    `| memory during a ${4 * mb} MiB transfer (RSS MB, before → peak) | ${growth(reference.files?.largeRssBeforeMb, reference.files?.largeRssPeakMb)} | ${growth(ours.files?.largeRssBeforeMb, ours.files?.largeRssPeakMb)} | |`,
    `| memory during a ${16 * mb} MiB transfer after those (RSS MB, before → peak) | not run | ${growth(ours.files?.hugeRssBeforeMb, ours.files?.hugeRssPeakMb)} | |`,
  );
  for (const [name, f] of [
    ["sandbox-agent", reference.files],
    ["this project", ours.files],
  ] as const) {
    if (f?.refused) lines.push(`| ${name} refused the ${mb} MiB and ${4 * mb} MiB files | ${f.refused.replace(/\|/g, "/")} | | |`);
  }
  const rss = (f: Figures) => Object.entries(f).filter(([k]) => k.startsWith("rss"));
  lines.push("", "| memory (RSS, MB) | idle | with 20 live servers |", "|---|---:|---:|");
  for (const [name, f] of [
    ["direct stdio (agents only)", direct],
    ["sandbox-agent", reference],
    ["this project", ours],
  ] as const) {
    void rss;
    const idle = Object.entries(f.rssIdleMb)
      .map(([k, v]) => `${k} ${fmt(v, 1)}`)
      .join(", ");
    const loaded = Object.entries(f.rssLoadedMb)
      .map(([k, v]) => `${k} ${fmt(v, 1)}`)
      .join(", ");
    lines.push(`| ${name} | ${idle} | ${loaded} |`);
  }
  const grew = (before: Record<string, number> | undefined, peak: Record<string, number> | undefined) => (peak?.workerd ?? Infinity) - (before?.workerd ?? 0);
  const workerdGrowth = grew(ours.files?.rssBeforeMb, ours.files?.rssPeakMb);
  const workerdLargeGrowth = grew(ours.files?.largeRssBeforeMb, ours.files?.largeRssPeakMb);
  // Past the warm-up: how much higher workerd's peak went for a file four times larger again.
  const workerdHugeAbove = (ours.files?.hugeRssPeakMb?.workerd ?? Infinity) - (ours.files?.largeRssPeakMb?.workerd ?? 0);
  const { addedMs, addedCpuMs } = addedOverFloor(ours, floor);
  const throughput = (ms: number | undefined) => (ms ? mb / (ms / 1000) : Number.NaN);
  const oursFiles = ours.files;
  const refFiles = reference.files;
  // Paired in time where both sides ran in this run (bench/paired.ts); else (BENCH_ONLY_OURS) the ratio of the medians.
  const writeVsFloor = oursFiles?.smallVsFloor?.write.median ?? (oursFiles?.smallWriteMs ?? Number.NaN) / (floor.smallFiles?.writeMs ?? Number.NaN);
  const readVsFloor = oursFiles?.smallVsFloor?.read.median ?? (oursFiles?.smallReadMs ?? Number.NaN) / (floor.smallFiles?.readMs ?? Number.NaN);
  const writeVsReference = oursFiles?.smallVsSandboxAgent?.write.median ?? (oursFiles?.smallWriteMs ?? Number.NaN) / (refFiles?.smallWriteMs ?? Number.NaN);
  const readVsReference = oursFiles?.smallVsSandboxAgent?.read.median ?? (oursFiles?.smallReadMs ?? Number.NaN) / (refFiles?.smallReadMs ?? Number.NaN);
  const streamVsDirect = ours.streamVsDirect?.median ?? ours.streamMsgsPerSec / direct.streamMsgsPerSec;
  const targets = [
    // Issue 42's goals: the floor of this architecture, not sandbox-agent, is the yardstick (the floor alone is 2–3.5× sandbox-agent here).
    [`round trip p50 ≤ 1.25× the floor of this architecture (${fmt(ours.rttP50Ms / floor.rttP50Ms)}×)`, ours.rttP50Ms / floor.rttP50Ms <= 1.25],
    [
      `the latency added over the floor (${fmt(addedMs)} ms) ≤ 1.5× the CPU added (${fmt(addedCpuMs)} ms): no waiting without work`,
      addedMs <= 1.5 * Math.max(addedCpuMs, 0),
    ],
    [
      `1 MiB file write ≤ 1.2× the floor's and read ≤ 1.0× (${fmt(writeVsFloor)}×, ${fmt(readVsFloor)}×, medians of the pairs; against sandbox-agent ${fmt(writeVsReference)}×, ${fmt(readVsReference)}×)`,
      writeVsFloor <= 1.2 && readVsFloor <= 1,
    ],
    [
      `${mb} MiB write and read ≥ 100 MiB/s (${fmt(throughput(oursFiles?.writeMs), 0)}, ${fmt(throughput(oursFiles?.readMs), 0)})`,
      throughput(oursFiles?.writeMs) >= 100 && throughput(oursFiles?.readMs) >= 100,
    ],
    [
      `stream throughput ≥ 0.95× an ACP client on the agent's own stdio (${fmt(streamVsDirect)}×, the median of the pairs), every update delivered`,
      streamVsDirect >= 0.95 && ours.streamDelivered === STREAM_EVENTS,
    ],
    [
      `sidecar private memory with 20 servers ≤ 40 MB (${fmt(ours.rssLoadedMb["sidecar private"] ?? Number.NaN, 1)} MB)`,
      (ours.rssLoadedMb["sidecar private"] ?? Infinity) <= 40,
    ],
    [
      // A relay that holds whole files grows four times as much for a file four times as large. The first
      // transfers are also the heap's warm-up, so they are reported, and the check is made past them: a
      // relay holding the 16× file would peak hundreds of MB higher than at 4×; one that streams, no higher.
      `workerd's memory does not follow the file's size: its peak at ${16 * mb} MiB is ${fmt(workerdHugeAbove, 0)} MB above its peak at ${4 * mb} MiB (≤ 16 MB; first-time growth ${fmt(workerdGrowth, 0)} MB at ${mb} MiB, ${fmt(workerdLargeGrowth, 0)} MB at ${4 * mb} MiB, the heap warming up)`,
      workerdHugeAbove <= 16,
    ],
  ] as const;
  lines.push("", "Targets:", ...targets.map(([name, met]) => `- ${met ? "met" : "MISSED"}: ${name}`));
  return lines.join("\n");
}

if (process.env.BENCH_ONLY === "policy") {
  // Pure functions: nothing to build or start.
  console.log(policyReport(await benchPolicy()));
  process.exit(0);
}
await buildAll();
if (process.env.BENCH_ONLY === "rtt") {
  // Round trips only, the floor's against this project's (for iterating on a call's cost: about a minute).
  const [floor, ours] = await withFloor((floorTarget) =>
    withThisProject(async (thisProject) => {
      const rtts = await roundTrips([floorTarget, thisProject]);
      return [rtts.get(floorTarget)!, rtts.get(thisProject)!] as const;
    }),
  );
  const { addedMs, addedCpuMs } = addedOverFloor(ours, floor);
  console.log(JSON.stringify({ floor, ours }, null, 2));
  console.log(
    `p50 ${fmt(ours.rttP50Ms, 3)} ms against the floor's ${fmt(floor.rttP50Ms, 3)} (${fmt(ours.rttP50Ms / floor.rttP50Ms)}×); ` +
      `latency added ${fmt(addedMs, 3)} ms, CPU added ${fmt(addedCpuMs, 3)} ms`,
  );
  process.exit(0);
}
if (process.env.BENCH_ONLY === "stream") {
  // Streams only, this project's against the direct client's, alternated five times (for iterating on a stream's cost).
  await withThisProject(async (thisProject) => {
    const [directs, ours] = await alternatedStreams([thisProject], 0, 5);
    for (const [i, sample] of ours!.entries()) {
      const directCpu = directs![i]!.cpuUsPerUpdate;
      const used = sample.cpuUsPerUpdate;
      // What this machine's cores allow at best: the direct path waits on its agent alone; ours has the same
      // agent's work plus the sidecar's, workerd's and its client's to share the cores with (µs per update).
      const ourWork = directCpu.agent! + (used.sidecar ?? 0) + (used.workerd ?? 0) + used.client!;
      const best = Math.max(directCpu.agent!, directCpu.client!) / Math.max(directCpu.agent!, ourWork / availableParallelism());
      console.log(
        `${STREAM_EVENTS} updates: ${fmt(sample.streamMs, 0)} ms (${sample.delivered} delivered) against the direct client's ${fmt(directs![i]!.streamMs, 0)} ms: ${fmt(updatesPerSecond(sample) / updatesPerSecond(directs![i]!))}×; ` +
          `CPU µs per update: workerd ${fmt(used.workerd ?? NaN, 1)}, sidecar ${fmt(used.sidecar ?? NaN, 1)}, client ${fmt(used.client!, 1)}; ` +
          `direct: agent ${fmt(directCpu.agent!, 1)}, client ${fmt(directCpu.client!, 1)}; at best on ${availableParallelism()} cores: ${fmt(best)}×`,
      );
    }
    console.log(`median of the five pairs' ratios: ${fmt(streamRatios(ours!, directs!).median)}×`);
  });
  process.exit(0);
}
if (process.env.BENCH_ONLY === "stages") {
  // Where a round trip's CPU goes, by stage: a CPU profile of workerd's isolate (bench/stages.ts).
  const figures = await benchStages();
  console.log(stagesReport(figures));
  console.log(JSON.stringify(figures, null, 2));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "first-visit") {
  console.log(firstVisitReport(await benchFirstVisit()));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "notify") {
  console.log(notifyReport(await benchNotify()));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "preview") {
  // The relay's floor as the last full run measured it (a full run measures both in the same run).
  const last = JSON.parse(await readFile(join(ROOT, "bench", "results", "latest.json"), "utf8").catch(() => "{}")) as { floor?: { rttP50Ms?: number } };
  console.log(previewReport(await benchPreview(), last.floor?.rttP50Ms ?? null));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "acp") {
  // The floor's HTTP round trip measured in the same run, then the two transports of /acp.
  const floor = await withFloor(async (floorTarget) => (await roundTrips([floorTarget])).get(floorTarget)!);
  console.log(acpTransportReport(await benchAcpTransports(), floor.rttP50Ms));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "reconnect") {
  console.log(reconnectReport(await benchReconnect()));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "attempts") {
  console.log(attemptsReport(await benchAttempts()));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "sandbox") {
  console.log(sandboxReport(await benchSandbox()));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "review") {
  console.log(reviewReport(await benchReview()));
  process.exit(0);
}
if (process.env.BENCH_ONLY === "files") {
  // 1 MiB files only, the floor's against this project's, alternated (for iterating on a file's cost).
  const [floorSamples, ourSamples] = await withFloor((floorTarget) => withThisProject((thisProject) => alternatedSmallFiles([floorTarget, thisProject])));
  const [floor, ours, paired] = [smallMedians(floorSamples!), smallMedians(ourSamples!), smallRatios(ourSamples!, floorSamples!)];
  console.log(
    `1 MiB write ${fmt(ours.writeMs)} ms against the floor's ${fmt(floor.writeMs)} (medians; the median of the ${SMALL_FILE_RUNS} pairs' ratios ${fmt(paired.write.median)}×); ` +
      `read ${fmt(ours.readMs)} ms against ${fmt(floor.readMs)} (${fmt(paired.read.median)}×)`,
  );
  process.exit(0);
}
console.error(`bench: ${RTT_CALLS} round trips, ${STREAM_EVENTS} streamed updates, ${CONCURRENT} concurrent servers, ${COLD_STARTS} cold starts each`);
// BENCH_ONLY_OURS=1 skips the other two (for iterating on this project; ratios then come from the last full run).
const previous = process.env.BENCH_ONLY_OURS
  ? (JSON.parse(await readFile(join(ROOT, "bench", "results", "latest.json"), "utf8")) as { direct: Figures; sandboxAgent: Figures; floor: RoundTrips })
  : null;
console.error("bench: direct stdio ...");
const directBase = previous ? null : await benchDirect();
console.error("bench: sandbox-agent, the floor of this architecture and this project ...");
const [direct, reference, floor, ours] = previous
  ? [
      previous.direct,
      previous.sandboxAgent,
      previous.floor,
      await withThisProject(async (target): Promise<Figures> => {
        const rtt = (await roundTrips([target])).get(target)!;
        const [firstDirect, firstOurs] = await alternatedStreams([target], 0, 1);
        const servers = await benchServers(target);
        const [ourSmall] = await alternatedSmallFiles([target]);
        const files = await benchFiles(target, smallFields(ourSmall!));
        const [directStreams, ourStreams] = await alternatedStreams([target], 1, STREAM_ROUNDS);
        for (const id of SERVER_IDS) await deleteServer(target, id);
        const oursAll = [...firstOurs!, ...ourStreams!];
        return { ...rtt, ...servers, ...streamFigures(oursAll), streamVsDirect: streamRatios(oursAll, [...firstDirect!, ...directStreams!]), files };
      }),
    ]
  : await withSandboxAgent((sandboxAgent) =>
      withFloor((floorTarget) =>
        withThisProject(async (thisProject) => {
          const rtts = await roundTrips([sandboxAgent, floorTarget, thisProject]);
          // The streams' round 0, then what is measured with its servers up (the memory figures, as with one
          // stream before), the 1 MiB files alternated, the large files, and the streams' other rounds last.
          console.error(`bench: the streams' first round, alternated with the direct client's ...`);
          const first = await alternatedStreams([sandboxAgent, thisProject], 0, 1);
          console.error("bench: sandbox-agent ...");
          const referenceServers = await benchServers(sandboxAgent);
          console.error("bench: this project ...");
          const ourServers = await benchServers(thisProject);
          console.error(`bench: ${SMALL_FILE_RUNS} 1 MiB files a setup, alternated with the floor's ...`);
          const [floorSmall, referenceSmall, ourSmall] = await alternatedSmallFiles([floorTarget, sandboxAgent, thisProject]);
          const referenceFiles = await benchFiles(sandboxAgent, smallFields(referenceSmall!));
          const ourFiles = await benchFiles(thisProject, {
            ...smallFields(ourSmall!),
            smallVsFloor: smallRatios(ourSmall!, floorSmall!),
            smallVsSandboxAgent: smallRatios(ourSmall!, referenceSmall!),
          });
          console.error(`bench: the streams' other ${STREAM_ROUNDS - 1} rounds, alternated with the direct client's ...`);
          const rest = await alternatedStreams([sandboxAgent, thisProject], 1, STREAM_ROUNDS);
          for (const target of [sandboxAgent, thisProject]) for (const id of SERVER_IDS) await deleteServer(target, id);
          const [directStreams, referenceStreams, ourStreams] = first.map((samples, side) => [...samples, ...rest[side]!]);
          const reference: Figures = {
            ...rtts.get(sandboxAgent)!,
            ...referenceServers,
            ...streamFigures(referenceStreams!),
            streamVsDirect: streamRatios(referenceStreams!, directStreams!),
            files: referenceFiles,
          };
          const ours: Figures = {
            ...rtts.get(thisProject)!,
            ...ourServers,
            ...streamFigures(ourStreams!),
            streamVsDirect: streamRatios(ourStreams!, directStreams!),
            streamVsSandboxAgent: streamRatios(ourStreams!, referenceStreams!),
            files: ourFiles,
          };
          const floor: RoundTrips = { ...rtts.get(floorTarget)!, smallFiles: smallMedians(floorSmall!) };
          const direct: Figures = { ...directBase!, ...streamFigures(directStreams!) };
          return [direct, reference, floor, ours] as const;
        }),
      ),
    );
if (process.env.BENCH_ONLY === "relay") {
  // The first table only (the four setups side by side), not written to latest.json.
  console.log(report(direct, reference, floor, ours));
  process.exit(0);
}
console.error("bench: the stream's storage rows, counted by the instrumented worker ...");
ours.streamStorageRows = await recordedStreamRows();
const table = report(direct, reference, floor, ours);
console.log(table);
console.error("bench: checkpoints of a 10,000-file folder ...");
const review = await benchReview();
console.log(reviewReport(review));
console.error("bench: attempt groups over a 10,000-file repository ...");
const attempts = await benchAttempts();
console.log(attemptsReport(attempts));
console.error("bench: sandboxes: an agent's start, a turn and a connection inside and outside ...");
const sandbox = sandboxToolsPresent() ? await benchSandbox() : null;
if (sandbox) console.log(sandboxReport(sandbox));
console.error("bench: a first visit on a slow phone network ...");
const firstVisit = await benchFirstVisit();
console.log(firstVisitReport(firstVisit));
console.error("bench: a permission asked: the webhook, the push, and a rule's answer ...");
const notify = await benchNotify();
console.log(notifyReport(notify));
console.error("bench: previews: 100 MiB each way, memory, a small request's added latency ...");
const preview = await benchPreview();
console.log(previewReport(preview, floor.rttP50Ms));
console.error("bench: ACP's remote transport over the WebSocket and Streamable HTTP ...");
const acpTransports = await benchAcpTransports();
console.log(acpTransportReport(acpTransports, floor.rttP50Ms));
console.error("bench: the permission policy's matching at its worst ...");
console.log(policyReport(await benchPolicy()));
console.error("bench: the first answer after a sidecar comes back, through the API and the dashboard ...");
const reconnect = await benchReconnect();
console.log(reconnectReport(reconnect));
await mkdir(join(ROOT, "bench", "results"), { recursive: true });
const machine = {
  cpus: (await import("node:os")).cpus().length,
  cpuModel: (await import("node:os")).cpus()[0]?.model ?? "?",
  node: process.version,
  memGb: Math.round((await import("node:os")).totalmem() / 2 ** 30),
};
await writeFile(
  join(ROOT, "bench", "results", "latest.json"),
  JSON.stringify(
    {
      at: new Date().toISOString(),
      machine,
      direct,
      sandboxAgent: reference,
      floor,
      thisProject: { ...ours, ...acpTransports },
      review,
      attempts,
      sandbox,
      firstVisit,
      // The names the issue of record asks for (bench/README.md).
      dashboard: firstVisit ? { slow4gUsableMs: firstVisit.usableMs, sessionsViewJsGzipBytes: firstVisit.scriptBytes } : null,
      // Steps left out of this run and why (no browser on this machine: bench/browser.ts).
      skipped: [...(chromiumPath() ? [] : ["first visit", "the dashboard after a reconnect"]), ...(sandbox ? [] : ["sandboxes"])],
      notify,
      preview,
      reconnect,
    },
    null,
    2,
  ),
);
console.error("bench: figures written to bench/results/latest.json");
if (!chromiumPath()) console.error("bench: the browser steps were skipped: no Chromium (bash scripts/ensure-chromium.sh, or set CHROMIUM_PATH)");
if (!sandbox) console.error("bench: the sandbox step was skipped: no bwrap or socat (bash scripts/ensure-sandbox-tools.sh)");
