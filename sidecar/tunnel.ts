/**
 * The sidecar's end of the tunnel: it dials out to `/_tunnel/{machine}` with its machine
 * token, greets, serves calls and stream subscriptions, and comes back by itself with
 * backoff whenever the connection drops.
 */
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { z } from "zod";
import {
  encodeFrame,
  PING_FRAME,
  PONG_FRAME,
  TUNNEL_PATH_PREFIX,
  TUNNEL_PROTOCOL_VERSION,
  type PackedEvents,
  type SidecarFrame,
} from "@agent-runtime/protocol/frames";
import { isReadOnly, parseOpArgs, type OpArgs, type OpName, type OpResult } from "@agent-runtime/protocol/ops";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { errorText, logger } from "./log";
import type { TunnelState } from "./status-file";
import { StreamHub, type StreamResolver } from "./streams/stream-hub";
import { routeStreamFrame } from "./streams/stream-frames";
import type { CallContext } from "./tunnel-cancel";
import { TunnelCalls } from "./tunnel-calls";
import { readWorkerFrame } from "./tunnel-frames";
import { Redial, retryAfterMs } from "./tunnel-redial";
import type { PreviewFrame } from "@agent-runtime/protocol/preview";
import type { AgentId } from "@agent-runtime/protocol/values";

/** Where preview frames go (preview/preview-proxy.ts); a sidecar with one offers previews in its hello. */
export interface PreviewStreams {
  readonly exposed: { spec: string };
  frame(frame: PreviewFrame): void;
  closeAll(): void;
}

const log = logger("tunnel");

export type { CallContext } from "./tunnel-cancel";

/** Every operation's handler: total, so an operation the worker may call and the sidecar lacks is a type error. */
export type OpHandlers = { [N in OpName]: (args: OpArgs<N>, ctx: CallContext) => Promise<OpResult<N>> };

export interface TunnelOptions {
  /** What the machine's sandbox can enforce and its owner set, for the hello (null: not probed yet). */
  sandbox?: () => MachineSandbox | null;
  url: string;
  machine: string;
  token: string;
  sidecarVersion: string;
  handlers: OpHandlers;
  /** How many pieces of an upload the handlers take before the first is stored (said in the hello). */
  uploadWindow?: number;
  streams: StreamResolver;
  /** The machine's previews: built with a way to send frames back (the tunnel's own `send`). */
  previews?: (send: (frame: SidecarFrame) => void) => PreviewStreams;
  /** Called when the worker refuses the token (never valid, or revoked): retrying cannot help. */
  onRefused?: (reason: string) => void;
  /** Called when another sidecar connected as this machine and took over: two must not take turns. */
  onReplaced?: () => void;
  /** How often to ping (default LIMITS.heartbeatMs); two intervals without a pong and the tunnel is redialed. */
  heartbeatMs?: number;
  /** After the worker went away, the first redial waits a random time up to this (default LIMITS.reconnectSpreadMs). */
  reconnectSpreadMs?: number;
  /** Called whenever the tunnel's state changes (for the status file), with what went wrong if anything did. */
  onState?: (change: TunnelStateChange) => void;
  /** Watches what listens on the machine, calling back on each change, until the returned function is called. */
  watchPorts?: (changed: () => void) => () => void;
}

export interface TunnelStateChange {
  state: TunnelState;
  error?: string;
  /** How to upgrade, when the worker says this sidecar is outdated. */
  upgrade?: string | null;
}

export class TunnelClient {
  private ws: WebSocket | null = null;
  private stopping = false;
  private readonly redial: Redial;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private lastPongMs = 0;
  /** Each call runs once, however often the worker sends it (tunnel-calls.ts). */
  private readonly calls = new TunnelCalls();
  /** This process's identity in every hello: the worker fails calls meant for an earlier process instead of re-sending them here. */
  private readonly bootId = randomUUID();
  /** Stops the watch of listening ports, while one runs (a worker that asked for `ports` frames). */
  private stopPortWatch: (() => void) | null = null;
  private readonly hub: StreamHub;
  private readonly previews: PreviewStreams | null;
  /** Agents whose login changed while the tunnel was down (bounded by the agents installed). */
  private readonly untold = new Set<AgentId>();
  /** The connection the worker welcomed (its hello accepted): notices go only to that one. */
  private welcomed: WebSocket | null = null;

  constructor(private readonly options: TunnelOptions) {
    this.redial = new Redial(options.reconnectSpreadMs ?? LIMITS.reconnectSpreadMs);
    this.hub = new StreamHub(
      options.streams,
      (frame) => this.send(frame),
      () => this.ws?.bufferedAmount ?? 0,
      (message) => this.sendRaw(message),
    );
    this.previews = options.previews?.((frame) => this.send(frame)) ?? null;
  }

  get tunnelUrl(): string {
    const base = this.options.url.replace(/\/+$/, "").replace(/^http/, "ws");
    return `${base}${TUNNEL_PATH_PREFIX}${encodeURIComponent(this.options.machine)}`;
  }

  start(): void {
    this.stopping = false;
    this.options.onState?.({ state: "connecting" });
    this.connect();
  }

  /** Drop the current connection without stopping (tests and fault drills use this). */
  drop(): void {
    this.ws?.terminate();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.calls.stop();
    this.stopPortWatch?.();
    this.stopPortWatch = null;
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once("close", () => resolve());
      ws.close(1000, "sidecar shutting down");
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000).unref();
    });
  }

  private connect(): void {
    const ws = new WebSocket(this.tunnelUrl, {
      headers: { authorization: `Bearer ${this.options.token}` },
      maxPayload: LIMITS.maxFrameBytes,
      perMessageDeflate: false,
      // A client must mask its frames; a key of zeros is a mask, and ws then skips the XOR (a 1 MiB piece
      // of a file cost 5 ms of JavaScript on Node 20). Masking guards proxies against pages that choose
      // the bytes a browser sends; this process is no browser page, and the tunnel runs inside TLS.
      generateMask: zeroMask,
    });
    this.ws = ws;
    ws.on("open", () => {
      this.send({
        t: "hello",
        protocol: TUNNEL_PROTOCOL_VERSION,
        machine: this.options.machine,
        sidecarVersion: this.options.sidecarVersion,
        platform: `${process.platform}-${process.arch} node-${process.version}`,
        heartbeatMs: this.heartbeatMs,
        bootId: this.bootId,
        ...(this.options.uploadWindow ? { uploadWindow: this.options.uploadWindow } : {}),
        ...(this.previews ? { preview: { expose: this.previews.exposed.spec } } : {}),
        ...sandboxOf(this.options.sandbox?.() ?? null),
      });
    });
    ws.on("message", (data, isBinary) => {
      // A binary frame carries bytes (a piece of an upload); everything else is JSON text.
      const message = isBinary ? toBuffer(data) : data.toString();
      if (message === PONG_FRAME) this.lastPongMs = Date.now();
      else this.onFrame(message);
    });
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => {
        const detail = safeDetail(body) ?? `HTTP ${res.statusCode}`;
        if (res.statusCode === 401 || res.statusCode === 403) {
          log.error(`the worker refused this machine's token: ${detail}`);
          this.stopping = true;
          this.options.onState?.({ state: "refused", error: `the worker refused this machine's token: ${detail}` });
          this.options.onRefused?.(detail);
        } else {
          // Under load (429, 503) the worker may say when to come back: the next redial honours it.
          const retryAfter = retryAfterMs(res.headers["retry-after"]);
          this.redial.refused(retryAfter);
          log.warn(
            `tunnel refused (${res.statusCode}): ${detail}${retryAfter !== null ? `; redialing after ${Math.round(retryAfter / 1000)} s or more, as asked` : ""}`,
          );
        }
        ws.terminate();
      });
    });
    ws.on("error", (err) => log.debug(`tunnel error: ${errorText(err)}`));
    ws.on("close", (code, reason) => this.onClose(ws, code, reason.toString()));
  }

  private onClose(ws: WebSocket, code: number, reason: string): void {
    if (this.ws !== ws) return;
    this.ws = null;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.stopPortWatch?.();
    this.stopPortWatch = null;
    this.hub.clear();
    this.previews?.closeAll(); // a proxied request cannot resume on another connection: it ends
    if (this.stopping) return;
    if (code === 4000) {
      log.error("another sidecar connected as this machine and took over; this one stops");
      this.stopping = true;
      this.options.onState?.({ state: "replaced", error: "another sidecar connected as this machine and took over" });
      this.options.onReplaced?.();
      return;
    }
    if (this.redial.attempts === 0) {
      log.warn(`tunnel closed (${code}${reason ? `: ${reason}` : ""}); reconnecting`);
      this.options.onState?.({ state: "reconnecting", error: `tunnel closed (${code}${reason ? `: ${reason}` : ""})` });
    }
    const delay = this.redial.next(code);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  private onFrame(message: string | Uint8Array): void {
    const parsed = readWorkerFrame(message);
    if (!parsed.ok) {
      // Said and logged, never dropped silently: a worker and a sidecar that disagree must show it.
      log.error(`the worker sent a frame this sidecar cannot read: ${parsed.error}`);
      this.send({ t: "bad", error: parsed.error });
      return;
    }
    const frame = parsed.frame;
    if (routeStreamFrame(frame, this.hub, this.previews)) return;
    switch (frame.t) {
      case "welcome":
        log.info(`connected to ${this.options.url} as machine '${frame.machine}'`);
        if (frame.sidecar?.outdated) log.warn(frame.sidecar.upgrade ?? `a newer sidecar (${frame.sidecar.latest}) is available`);
        this.options.onState?.({ state: "connected", upgrade: frame.sidecar?.upgrade ?? null });
        this.redial.connected();
        this.startHeartbeat();
        // Only a worker that reads them is told of ports (an older one would answer `bad`).
        this.stopPortWatch?.();
        this.stopPortWatch = frame.ports && this.options.watchPorts ? this.options.watchPorts(() => this.send({ t: "ports" })) : null;
        this.welcomed = this.ws;
        for (const agent of this.untold) this.send({ t: "login", agent });
        this.untold.clear();
        return;
      case "req":
        void this.serveCall(frame.id, frame.op, frame.args);
        return;
      case "cancel":
        // The worker gave up on this call: stop what it started (an ACP request stops waiting).
        this.calls.cancel(frame.id);
        return;
      case "bye":
        log.error(`the worker closed the tunnel: ${frame.reason}`);
        return;
      case "bad":
        log.error(`the worker could not read a frame of this sidecar: ${frame.error}`);
        return;
    }
  }

  /**
   * Ping every interval; the runtime answers without waking the machine's object. No pong for two
   * intervals means the tunnel is half-open (a network that silently dropped it): end it and redial.
   */
  private startHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.lastPongMs = Date.now();
    const ws = this.ws;
    this.heartbeat = setInterval(() => {
      if (!ws || this.ws !== ws) return;
      if (Date.now() - this.lastPongMs > 2 * this.heartbeatMs) {
        log.warn(`no answer to the tunnel's heartbeat for ${Date.now() - this.lastPongMs} ms; redialing`);
        ws.terminate();
        return;
      }
      this.sendRaw(PING_FRAME);
    }, this.heartbeatMs);
  }

  private get heartbeatMs(): number {
    return this.options.heartbeatMs ?? LIMITS.heartbeatMs;
  }

  private async serveCall(id: string, op: OpName, args: unknown): Promise<void> {
    const answer = await this.calls.serve(id, isReadOnly(op), (cancel) => this.run(id, op, args, cancel));
    if (answer === null) return; // cancelled: nobody waits for it any more
    this.hub.flushAll(); // what the agent wrote before this answer goes first
    this.sendRaw(answer); // if the tunnel is down now, the worker asks again after reconnecting
  }

  private async run<N extends OpName>(id: string, op: N, rawArgs: unknown, ctx: CallContext): Promise<string | Uint8Array> {
    try {
      const args = parseOpArgs(op, rawArgs);
      if (!args.ok)
        throw new ProblemError("invalid_request", `the arguments of ${op} are not what this sidecar reads (${args.error}); update the sidecar or the worker`);
      const handler: OpHandlers[N] = this.options.handlers[op];
      const value = await handler(args.args, ctx);
      const answer = encodeFrame({ t: "res", id, ok: true, value } satisfies SidecarFrame);
      // An answer the tunnel cannot carry is refused, never sent (the worker would close the tunnel).
      if (answer.length > LIMITS.maxFrameBytes)
        throw new ProblemError("payload_too_large", `the answer to ${op} is larger than the tunnel carries (${LIMITS.maxFrameBytes} bytes)`);
      return answer;
    } catch (err) {
      const problem = err instanceof ProblemError ? err.toInit() : { code: "internal" as const, detail: `the sidecar failed on ${op}: ${errorText(err)}` };
      if (!(err instanceof ProblemError)) log.error(`${op} failed: ${errorText(err)}`);
      return JSON.stringify({ t: "err", id, problem } satisfies SidecarFrame);
    }
  }

  /**
   * A notice of the sidecar's own to the worker (an agent's login changed). One made while the tunnel is
   * down, or open but not yet welcomed (a hello the worker may still refuse, a socket that may drop before
   * the welcome), is told after the next welcome, once per agent: the worker reads the login anew, so what
   * it learns is the state then, and a person waiting on the flow's page still gets its notification. A
   * half-open socket still looks welcomed until the heartbeat ends it; a notice sent into it is lost.
   */
  tell(frame: Extract<SidecarFrame, { t: "login" }>): void {
    if (this.ws !== null && this.welcomed === this.ws && this.ws.readyState === WebSocket.OPEN) this.send(frame);
    else this.untold.add(frame.agent);
  }

  private send(frame: SidecarFrame | PackedEvents): void {
    this.sendRaw(encodeFrame(frame));
  }

  private sendRaw(message: string | Uint8Array): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(message);
  }
}

/** ws hands a binary message over as one Buffer, or as its fragments when it arrived in several. */
function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

function safeDetail(body: string): string | null {
  try {
    return z.object({ detail: z.string() }).safeParse(JSON.parse(body)).data?.detail ?? null;
  } catch {
    return null;
  }
}

/** The masking key of every frame this sidecar sends (see `connect`). */
function zeroMask(mask: Uint8Array): void {
  mask.fill(0);
}

/** The hello's `sandbox`, when the machine's sandbox was probed. */
function sandboxOf(sandbox: MachineSandbox | null): { sandbox?: MachineSandbox } {
  return sandbox ? { sandbox } : {};
}
