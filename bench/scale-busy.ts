/**
 * The busy part of `npm run bench:scale` (bench/scale.ts starts the worker and the simulated sidecars):
 * what people reading streams, a probe's round trips and previews cost while many machines stream, and a
 * reconnect storm in the middle of it. The clients here are what a person's would be: SSE readers on
 * `GET /v1/acp/{server}` that reconnect with `Last-Event-ID`, a probe POSTing to a machine of its own,
 * small GETs through previews. Loopback only; every wait is bounded.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { percentile } from "./proc";
import { BUSY_SERVER, type SimSidecar } from "./scale-sim";

/** The probe machine's relay server: the same call as the round-trip bench (`initialize`, answered at once). */
const PROBE_SERVER = "probe";
/** How long a storm call may take, retried on 503 and dropped connections, before it counts as lost. */
const STORM_CALL_DEADLINE_MS = 60_000;

export type Api = (path: string, init?: RequestInit) => Promise<Response>;

/**
 * One person following a machine's busy server over SSE, as a browser's EventSource would: on a dropped
 * connection it comes back with the last id it saw, after a short jittered wait. Every id is checked
 * against the one before it: an id skipped is an update lost, an id seen again one repeated.
 */
export class SseFollower {
  lastId = 0;
  received = 0;
  lost = 0;
  repeated = 0;
  reconnects = 0;
  private controller: AbortController | null = null;
  private stopped = false;
  private running: Promise<void> | null = null;

  constructor(
    readonly machine: string,
    private readonly api: Api,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      this.controller = new AbortController();
      try {
        const res = await this.api(`/machines/${this.machine}/v1/acp/${BUSY_SERVER}`, {
          headers: { accept: "text/event-stream", ...(this.lastId ? { "last-event-id": String(this.lastId) } : {}) },
          signal: this.controller.signal,
        });
        if (res.status === 200 && res.body) await this.read(res.body);
        else await res.body?.cancel();
      } catch {
        // the worker went away (a restart): come back below
      }
      if (this.stopped) return;
      this.reconnects++;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 400));
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let tail = "";
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      const text = tail + decoder.decode(chunk, { stream: true });
      const events = text.split("\n\n");
      tail = events.pop() ?? "";
      for (const event of events) {
        const id = /^id: (\d+)$/m.exec(event);
        if (!id || !/^event: message$/m.test(event)) continue;
        const seq = Number(id[1]);
        if (seq <= this.lastId) this.repeated++;
        else {
          this.lost += seq - this.lastId - 1;
          this.lastId = seq;
          this.received++;
        }
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.controller?.abort();
    await this.running;
  }
}

/** One JSON-RPC request through the relay; resolves with the HTTP status. */
export async function relayCall(api: Api, machine: string, server: string, message: object, query = ""): Promise<number> {
  const res = await api(`/machines/${machine}/v1/acp/${server}${query}`, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", ...message }) });
  await res.arrayBuffer();
  return res.status;
}

/** Start a machine's busy server and its session, as a client would: `initialize` naming the agent, `session/new`. */
export async function openBusySession(api: Api, machine: string): Promise<void> {
  const init = await relayCall(
    api,
    machine,
    BUSY_SERVER,
    { id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } },
    "?agent=mock",
  );
  const created = await relayCall(api, machine, BUSY_SERVER, { id: 2, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } });
  if (init !== 200 || created !== 200) throw new Error(`${machine}: opening the busy session answered ${init} / ${created}`);
}

/** The probe: `initialize` on a running server of its own machine, one at a time; each call's time in ms. */
export class Probe {
  private next = 10;

  constructor(
    private readonly api: Api,
    readonly machine: string,
  ) {}

  async open(): Promise<void> {
    const status = await relayCall(
      this.api,
      this.machine,
      PROBE_SERVER,
      { id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } },
      "?agent=mock",
    );
    if (status !== 200) throw new Error(`the probe's server answered ${status}`);
  }

  /** `calls` round trips, or as many as fit until `until` says stop; one every `paceMs` at most. */
  async run(calls: number, until: () => boolean = () => false, paceMs = 0): Promise<number[]> {
    const times: number[] = [];
    for (let i = 0; i < calls && !until(); i++) {
      const started = performance.now();
      const status = await relayCall(this.api, this.machine, PROBE_SERVER, {
        id: this.next++,
        method: "initialize",
        params: { protocolVersion: 1, clientCapabilities: {} },
      });
      if (status !== 200) throw new Error(`a probe call answered ${status}`);
      times.push(performance.now() - started);
      if (paceMs) await new Promise((r) => setTimeout(r, Math.max(0, paceMs - (performance.now() - started))));
    }
    return times;
  }
}

export const p50p99 = (times: number[]) => ({ p50: Math.round(percentile(times, 50) * 100) / 100, p99: Math.round(percentile(times, 99) * 100) / 100 });

/** The small app every preview machine exposes (a few bytes per GET), in this process. */
export async function previewApp(): Promise<{ port: number; server: Server }> {
  const server = createServer((_req, res) => res.end("ok"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { port: (server.address() as { port: number }).port, server };
}

/** A preview of `port` on `machine`: its address (path mode, the pass in the path). */
export async function openPreview(api: Api, machine: string, port: number): Promise<string> {
  const res = await api(`/machines/${machine}/v1/ports/${port}/preview`, { method: "POST" });
  if (res.status !== 200 && res.status !== 201) throw new Error(`${machine}: opening a preview answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { url: string }).url;
}

/**
 * A call made during a reconnect storm: retried (with a jittered wait) while the machine is away (503) or
 * the worker is down, until it is answered or its deadline passes. Resolves true when answered.
 */
export async function stormCall(api: Api, sim: SimSidecar, id: string): Promise<{ answered: boolean; tries: string[] }> {
  const started = Date.now();
  const tries: string[] = [];
  while (Date.now() - started < STORM_CALL_DEADLINE_MS) {
    try {
      const status = await relayCall(api, sim.machine, BUSY_SERVER, { id, method: "bench/storm", params: {} });
      tries.push(String(status));
      if (status === 200) return { answered: true, tries };
      if (status !== 503 && status !== 502 && status !== 500) return { answered: false, tries };
    } catch (err) {
      tries.push(`error: ${(err as Error).message}`); // the worker is not listening yet
    }
    await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
  }
  return { answered: false, tries };
}

/** Whole-machine CPU from /proc/stat: busy and total jiffies, to tell how much of both cores was used. */
export async function machineCpu(): Promise<{ busy: number; total: number }> {
  const { readFile } = await import("node:fs/promises");
  const fields = (await readFile("/proc/stat", "utf8")).split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}
