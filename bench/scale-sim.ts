/**
 * One simulated sidecar for `npm run bench:scale`: a real WebSocket to the real worker speaking the real
 * tunnel protocol, with the sidecar's own code where the protocol is more than a frame or two: its stream
 * hub and event logs serve the worker's subscriptions (`sub`/`unsub`, packed and shared `ev` batches), its
 * preview proxy answers previews, its redial rule (sidecar/tunnel-redial.ts's `Redial`, the sidecar's own: a
 * spread after the worker went away, exponential backoff with jitter, a refusal's `Retry-After` honoured)
 * brings it back. What it does not have is
 * an agent: `acp.post` is answered here at once (an `initialize`, a `session/new`, anything else with an
 * empty result), and a streaming machine appends `session/update` notifications to its server's log at a
 * set rate, as an agent writing would. Every call it runs is counted by its JSON-RPC id, so that a call
 * run twice shows.
 */
import WebSocket from "ws";
import {
  encodeFrame,
  PING_FRAME,
  PONG_FRAME,
  parseWorkerFrame,
  type PackedEvents,
  type SidecarFrame,
  TUNNEL_PROTOCOL_VERSION,
} from "@agent-runtime/protocol/frames";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { OPS } from "@agent-runtime/protocol/ops";
import { LATEST_SIDECAR_VERSION } from "@agent-runtime/protocol/version";
import { ExposedPorts } from "../sidecar/preview/exposed-ports";
import { PreviewProxy } from "../sidecar/preview/preview-proxy";
import { EventLog } from "../sidecar/streams/event-log";
import { routeStreamFrame } from "../sidecar/streams/stream-frames";
import { StreamHub } from "../sidecar/streams/stream-hub";
import { Redial, retryAfterMs } from "../sidecar/tunnel-redial";

/** The ACP server each busy machine streams on. */
export const BUSY_SERVER = "busy";
const LOG_LIMITS = { maxEvents: 10_000, maxBytes: 4 * 1024 * 1024 };

export interface SimOptions {
  machine: string;
  token: string;
  url: () => string;
  heartbeatMs: number;
  /** The port of an app this machine exposes to previews, if it carries one. */
  previewPort?: number;
}

export class SimSidecar {
  ws: WebSocket | null = null;
  welcomed = 0;
  pongs = 0;
  /** Dials refused with an HTTP status (429, 503, ...), by status. */
  refusals = new Map<number, number>();
  lastSkillsVersion: string | null = null;
  /** Times each ACP request was run, by `<serverId>/<JSON-RPC id>`: more than one is a call run twice. */
  readonly runs = new Map<string, number>();
  /** Updates appended to the busy server's log (what an agent wrote). */
  appended = 0;
  /** Frames sent to the worker, pings not counted: each is one incoming WebSocket message the object is billed for. */
  framesSent = 0;
  private readonly logs = new Map<string, EventLog>();
  private readonly hub: StreamHub;
  private readonly previews: PreviewProxy | null;
  private readonly bootId = `sim-${Math.random().toString(36).slice(2)}`;
  /** Answers by tunnel call id (see `serve`). */
  private readonly answers = new Map<string, SidecarFrame>();
  private pinger: NodeJS.Timeout | null = null;
  /** Dials made, and when the last one started (ms since the epoch): where a storm's time went. */
  dials = 0;
  lastDialAtMs = 0;
  /** When the last welcome came. */
  welcomedAtMs = 0;
  private redialTimer: NodeJS.Timeout | null = null;
  private readonly redial = new Redial(LIMITS.reconnectSpreadMs);
  private stopped = false;
  private connectedWaiters: (() => void)[] = [];

  constructor(readonly options: SimOptions) {
    const send = (frame: SidecarFrame | PackedEvents) => this.send(frame);
    this.hub = new StreamHub(
      (ref) => (ref.kind === "acp" ? (this.logs.has(ref.serverId) ? { log: this.logs.get(ref.serverId)! } : null) : null),
      send,
      () => this.ws?.bufferedAmount ?? 0,
    );
    this.previews = options.previewPort ? new PreviewProxy(ExposedPorts.parse(String(options.previewPort)), send) : null;
  }

  get machine(): string {
    return this.options.machine;
  }

  /** Dial; resolves at the worker's welcome (however many redials that takes). */
  connect(): Promise<void> {
    const done = new Promise<void>((resolve) => this.connectedWaiters.push(resolve));
    this.dial();
    return done;
  }

  private dial(): void {
    this.redialTimer = null;
    this.dials++;
    this.lastDialAtMs = Date.now();
    const ws = new WebSocket(`${this.options.url().replace(/^http/, "ws")}/_tunnel/${this.machine}`, {
      headers: { authorization: `Bearer ${this.options.token}` },
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.on("open", () =>
      this.send({
        t: "hello",
        protocol: TUNNEL_PROTOCOL_VERSION,
        machine: this.machine,
        sidecarVersion: LATEST_SIDECAR_VERSION,
        platform: "bench",
        heartbeatMs: this.options.heartbeatMs,
        bootId: this.bootId,
        ...(this.previews ? { preview: { expose: this.previews.exposed.spec } } : {}),
      }),
    );
    ws.on("message", (data, isBinary) => {
      const message = isBinary ? new Uint8Array(data as Buffer) : data.toString();
      if (message === PONG_FRAME) this.pongs++;
      else this.onFrame(message);
    });
    // A refusal (429, 503 under load): the dial failed; the close below backs off as the sidecar does,
    // honouring the refusal's Retry-After.
    ws.on("unexpected-response", (_req, res) => {
      this.refusals.set(res.statusCode ?? 0, (this.refusals.get(res.statusCode ?? 0) ?? 0) + 1);
      this.redial.refused(retryAfterMs(res.headers["retry-after"]));
      res.resume();
      ws.terminate();
    });
    ws.on("error", () => undefined);
    ws.on("close", (code) => {
      if (this.ws !== ws) return;
      if (this.pinger) clearInterval(this.pinger);
      this.hub.clear();
      this.previews?.closeAll();
      if (this.stopped) return;
      this.redialTimer = setTimeout(() => this.dial(), this.redial.next(code));
    });
  }

  private send(frame: SidecarFrame | PackedEvents): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    this.framesSent++;
    this.ws.send(encodeFrame(frame));
  }

  private onFrame(message: string | Uint8Array): void {
    const parsed = parseWorkerFrame(message);
    if (!parsed.ok) throw new Error(`${this.machine}: the worker sent a frame the sidecar cannot read: ${parsed.error}`);
    const frame = parsed.frame;
    switch (frame.t) {
      case "welcome": {
        this.welcomed++;
        this.welcomedAtMs = Date.now();
        this.redial.connected();
        if (this.pinger) clearInterval(this.pinger);
        const ws = this.ws!;
        this.pinger = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(PING_FRAME), this.options.heartbeatMs);
        for (const resolve of this.connectedWaiters.splice(0)) resolve();
        return;
      }
      case "req":
        this.serve(frame.id, frame.op, frame.args);
        return;
      default:
        // The streams' and the previews' frames, served as the sidecar's tunnel serves them.
        routeStreamFrame(frame, this.hub, this.previews);
        return;
    }
  }

  /**
   * A call, answered at once. As the sidecar's tunnel does (its answered-call memory), a call the worker
   * sends again after a reconnect, by the same tunnel id, is answered from memory, never run twice.
   */
  private serve(id: string, op: string, rawArgs: unknown): void {
    let answer = this.answers.get(id);
    if (!answer) {
      answer = this.run(id, op, rawArgs);
      if (this.answers.size >= 10_000) this.answers.clear();
      this.answers.set(id, answer);
    }
    this.send(answer);
  }

  private run(id: string, op: string, rawArgs: unknown): SidecarFrame {
    if (op === "skills.apply") {
      // Like the real sidecar: a version it applied already is answered as unchanged.
      const { version } = OPS["skills.apply"].args.parse(rawArgs);
      const unchanged = this.lastSkillsVersion === version;
      this.lastSkillsVersion = version;
      return { t: "res", id, ok: true, value: { version, appliedAtMs: Date.now(), skills: [], perAgent: {}, errors: [], ...(unchanged ? { unchanged } : {}) } };
    }
    if (op !== "acp.post") return { t: "err", id, problem: { code: "internal", detail: `${op} is not simulated by bench/scale-sim.ts` } };
    const args = OPS["acp.post"].args.parse(rawArgs);
    const message = JSON.parse(args.message) as { id?: string | number; method?: string };
    if (args.agent && !this.logs.has(args.serverId)) this.logs.set(args.serverId, new EventLog(LOG_LIMITS, args.firstSeq ?? 1));
    if (args.awaitId === null) return { t: "res", id, ok: true, value: { status: 202 } };
    const key = `${args.serverId}/${String(args.awaitId)}`;
    this.runs.set(key, (this.runs.get(key) ?? 0) + 1);
    const result =
      args.method === "initialize"
        ? { protocolVersion: 1, agentCapabilities: { loadSession: true }, agentInfo: { name: "sim", version: "1" } }
        : args.method === "session/new"
          ? { sessionId: `${this.machine}-session` }
          : {};
    return { t: "res", id, ok: true, value: { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: message.id, result }) } };
  }

  /** What an agent streaming a turn writes: `count` text chunks of the busy server's session. */
  stream(count: number): void {
    const log = this.logs.get(BUSY_SERVER);
    if (!log) return;
    for (let i = 0; i < count; i++) {
      this.appended++;
      log.append(
        JSON.stringify({
          jsonrpc: "2.0",
          method: "session/update",
          params: {
            sessionId: `${this.machine}-session`,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${this.appended} ` } },
          },
        }),
      );
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.pinger) clearInterval(this.pinger);
    if (this.redialTimer) clearTimeout(this.redialTimer);
    this.previews?.closeAll();
    this.ws?.terminate();
  }
}
