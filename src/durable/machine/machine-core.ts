/**
 * One Durable Object per machine (docs/architecture.md, "The machine object"): its wiring. It owns the sidecar's
 * WebSocket (hibernation API) and tells each message where it goes; each feature is its own class,
 * registered in features.ts and reached here only through that list (machine/feature.ts). Calls in flight
 * stay here and are re-sent (same id) when the sidecar reconnects (it answers a repeated id from memory,
 * never running it twice); stream readers re-subscribe from the last sequence they delivered.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import { settings } from "../../settings";
import { PING_FRAME, PONG_FRAME } from "@agent-runtime/protocol/frames";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { runAlarm } from "../storage/alarm";
import { Subscribers } from "../streams/subscribers";
import { attachmentOf, SIDECAR_TAG, Tunnel } from "./tunnel";
import { ClientSockets } from "./client-sockets";
import type { MachineFeature } from "./feature";
import { machineFeatures, type MachineParts } from "./features";
import { objectRequestOf } from "./object-requests";
import { acceptSidecar, type FrameHandlers, readSidecarFrame } from "./sidecar-connection";
import { SidecarLifecycle } from "./sidecar-lifecycle";

export type CallOutcome<T> = Outcome<T>;

/**
 * The machine object's wiring: the tunnel, the registered features, and the sockets and the alarm the
 * runtime calls. Its RPC surface, one line a method, is `MachineObject` (machine.ts), which extends it.
 */
export class MachineObjectCore extends DurableObject<Env> {
  protected readonly tunnel: Tunnel;
  /** Each feature by its name, for the RPC methods (machine.ts). */
  protected readonly parts: MachineParts;
  private readonly features: readonly MachineFeature[];
  private readonly subscribers: Subscribers;
  private readonly clients: ClientSockets;
  private readonly lifecycle: SidecarLifecycle;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const config = settings(env);
    this.tunnel = new Tunnel({
      sockets: () => ctx.getWebSockets(SIDECAR_TAG),
      lastPingMs: (ws) => ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null,
      halfOpen: (ws) => ctx.waitUntil(this.lifecycle.gone(ws, 1001)),
      away: (problem) => this.lifecycle.away(problem),
      graceMs: config.reconnectGraceMs,
    });
    const { parts, list } = machineFeatures({
      ctx,
      env,
      tunnel: this.tunnel,
      machine: () => this.machineName(),
      endSocket: (ws, problem) => this.clients.end(ws, problem),
    });
    this.parts = parts;
    this.features = list;
    this.subscribers = new Subscribers(list.flatMap((feature) => feature.subscribers ?? []));
    this.clients = new ClientSockets(list, parts.holders, (ws) => ctx.getTags(ws));
    this.lifecycle = new SidecarLifecycle({
      tunnel: this.tunnel,
      team: parts.team,
      subscribers: this.subscribers,
      features: list,
      machineName: () => this.machineName(),
      waitUntil: (work) => ctx.waitUntil(work),
    });
    // Heartbeats are answered by the runtime: an idle machine's object is never woken by them.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_FRAME, PONG_FRAME));
  }

  // ---------------- sockets: the tunnel, and the features' own (terminal viewers, ACP's WebSocket form, previews) ----------------

  override async fetch(request: Request): Promise<Response> {
    const asked = objectRequestOf(request);
    for (const feature of this.features) {
      const answer = feature.fetch?.(request, asked);
      if (answer) return answer;
    }
    return acceptSidecar(request, {
      name: this.ctx.id.name ?? null,
      generation: () => this.parts.tokens.current(),
      sockets: (tag) => this.ctx.getWebSockets(tag),
      accept: (ws, tags) => this.ctx.acceptWebSocket(ws, tags),
    });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // The socket's kind (read once per socket: client-sockets.ts) tells the sidecar's messages, the hot path, from the rest.
    if (this.clients.owns(ws)) {
      await this.clients.message(ws, message);
      return;
    }
    const handled = readSidecarFrame(ws, message, this.frameHandlers(ws));
    if (handled) await handled;
  }

  /** Where a sidecar socket's frames go: made once per socket, not at every frame. */
  private readonly handlersOf = new WeakMap<WebSocket, FrameHandlers>();

  private frameHandlers(ws: WebSocket): FrameHandlers {
    let handlers = this.handlersOf.get(ws);
    if (!handlers) {
      handlers = {
        answered: (frame) => this.tunnel.answered(frame),
        subscribers: this.subscribers,
        hello: (frame) => this.lifecycle.hello(ws, frame),
        preview: (frame) => this.parts.previews.streams.fromSidecar(frame),
        ports: () => this.parts.sessions.recorder.portsChanged(),
        login: (agent) => this.ctx.waitUntil(this.parts.logins.flowChanged(agent)),
      };
      this.handlersOf.set(ws, handlers);
    }
    return handlers;
  }

  /** A socket closed: a feature's socket is its kind's to end, the tunnel's starts the grace. */
  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    if (!(await this.clients.closed(ws, code, reason))) await this.lifecycle.gone(ws, code);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws, 1011, "");
  }

  /** The machine this object holds: its own name (it is created by idFromName), else its sidecar's word. */
  protected machineName(): string {
    if (this.ctx.id.name) return this.ctx.id.name;
    const ws = this.ctx.getWebSockets(SIDECAR_TAG)[0];
    return (ws && attachmentOf(ws)?.machine) || "unknown";
  }

  /** Each registered feature's due work, then the alarm again by the earliest any still needs (storage/alarm.ts). */
  override async alarm(): Promise<void> {
    await runAlarm(this.ctx.storage, this.features);
  }
}
