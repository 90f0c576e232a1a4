/**
 * One Durable Object per machine (docs/architecture.md, "The machine object"): its wiring. It owns the sidecar's
 * WebSocket (hibernation API) and tells each message where it goes; each feature's work is its own class,
 * wired here to the tunnel. Calls in flight stay here and are re-sent (same id) when the sidecar reconnects
 * (it answers a repeated id from memory, never running it twice); stream readers re-subscribe from the last
 * sequence they delivered.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import { settings } from "../../settings";
import { PING_FRAME, PONG_FRAME } from "@agent-runtime/protocol/frames";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { MachineLogins } from "../logins/machine-logins";
import { attachmentOf, SIDECAR_TAG, Tunnel } from "./tunnel";
import { teamStub, tokenStub } from "../stubs";
import { MachineFiles } from "../files/machine-files";
import { MachineTeam } from "./machine-team";
import { ClientSockets } from "./client-sockets";
import { SseReaders } from "../streams/reader-registry";
import { Subscribers } from "../streams/subscribers";
import type { SessionRecorder } from "../sessions/recorder";
import type { SessionCalls } from "../sessions/session-calls";
import type { RecorderSubscriptions } from "../sessions/recorder-subscriptions";
import { machineSessions } from "../sessions/machine-sessions";
import type { PermissionGate } from "../policy/permission-gate";
import type { TaskRunner } from "../tasks/task-runner";
import { Deliverer, delivererSettings } from "../notifications/deliverer";
import { alarmBy } from "../storage/alarm";
import { MachineNotifications } from "../notifications/machine-notifications";
import { TerminalViewers } from "../terminals/terminal-viewers";
import { TokenGeneration } from "../tokens/token-generation";
import type { AcpConnections } from "../acp-transport/connection-registry";
import { objectRequestOf } from "./object-requests";
import { StreamHolders } from "../streams/stream-holders";
import { type AcpGateway, acpTransport } from "../acp-transport/acp-gateway";
import { acceptSidecar, readSidecarFrame } from "./sidecar-connection";
import { MachinePreviews } from "../preview/machine-previews";
import { SidecarLifecycle } from "./sidecar-lifecycle";
import { MachineFloor } from "../sandbox/machine-floor";
import { MachineAttempts } from "../attempts/machine-attempts";

export type CallOutcome<T> = Outcome<T>;

/**
 * The machine object's wiring: each feature's class, built once per object and joined to the tunnel, and
 * the sockets and the alarm the runtime calls. Its RPC surface, one line a method, is `MachineObject`
 * (machine.ts), which extends it.
 */
export class MachineObjectCore extends DurableObject<Env> {
  // Each feature's class (docs/architecture.md, "The machine object"): subscribers receive the machine's streams,
  // holders end streams with their token, the gate judges permission requests, clients are the other sockets.
  protected readonly tunnel: Tunnel;
  protected readonly readers: SseReaders;
  protected readonly viewers: TerminalViewers;
  protected readonly recorderSubscriptions: RecorderSubscriptions;
  protected readonly subscribers: Subscribers;
  protected readonly sessions: SessionRecorder;
  protected readonly sessionCalls: SessionCalls;
  protected readonly gate: PermissionGate;
  protected readonly tasks: TaskRunner;
  protected readonly notifications: MachineNotifications;
  protected readonly tokens: TokenGeneration;
  protected readonly holders: StreamHolders;
  protected readonly team: MachineTeam;
  protected readonly files: MachineFiles;
  protected readonly clients: ClientSockets;
  protected readonly acpConnections: AcpConnections;
  protected readonly acp: AcpGateway;
  protected readonly previews: MachinePreviews;
  protected readonly lifecycle: SidecarLifecycle;
  protected readonly attempts: MachineAttempts;
  protected readonly logins: MachineLogins;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const config = settings(env);
    const tunnel = new Tunnel({
      sockets: () => ctx.getWebSockets(SIDECAR_TAG),
      lastPingMs: (ws) => ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null,
      halfOpen: (ws) => ctx.waitUntil(this.lifecycle.gone(ws, 1001)),
      away: (problem) => this.lifecycle.away(problem),
      graceMs: config.reconnectGraceMs,
    });
    this.tunnel = tunnel;
    this.team = new MachineTeam({
      env,
      storage: ctx.storage,
      waitUntil: (work) => ctx.waitUntil(work),
      machine: () => this.machineName(),
      connectedMachine: () => tunnel.liveMachine(),
      call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
      keepPolicy: (stored) => this.gate.keep(stored),
    });
    this.files = new MachineFiles({
      call: (op, args) => tunnel.call(op, args),
      uploadWindow: () => tunnel.uploadWindow(),
      waitUntil: (work) => ctx.waitUntil(work),
    });
    const sidecar = { send: (frame: Parameters<Tunnel["send"]>[0]) => tunnel.send(frame), reachable: () => tunnel.reachable(), newId: () => tunnel.newId() };
    const hides = (serverId: string, seq: number, text: string) => this.gate.hides(serverId, seq, text);
    this.readers = new SseReaders({ ...sidecar, idleCloseMs: config.sseIdleCloseMs, acceptMs: config.reconnectGraceMs, hides });
    const sockets = { sockets: (tag: string) => ctx.getWebSockets(tag), accept: (ws: WebSocket, tags: string[]) => ctx.acceptWebSocket(ws, tags) };
    this.viewers = new TerminalViewers({ ...sidecar, ...sockets, call: (op, args) => tunnel.call(op, args) });
    this.notifications = new MachineNotifications(
      ctx.storage,
      new Deliverer(ctx.storage, { wake: (at) => alarmBy(ctx.storage, at), gone: (id) => teamStub(env).dropSubscription(id), ...delivererSettings(config) }),
      () => this.team.announceRecords(),
      (work) => ctx.waitUntil(work),
    );
    this.tokens = new TokenGeneration(ctx.storage, () => ctx.getWebSockets(SIDECAR_TAG));
    this.holders = new StreamHolders({
      sockets: (tag) => ctx.getWebSockets(tag),
      tagsOf: (ws) => ctx.getTags(ws),
      endSocket: (ws, problem) => this.clients.end(ws, problem),
      wake: (at) => alarmBy(ctx.storage, at),
      announce: (tokenId) => tokenStub(env, tokenId).streamsOn(this.machineName(), Date.now()),
    });
    const floor = new MachineFloor(ctx.storage);
    const sessions = machineSessions(ctx.storage, {
      tunnel,
      floor: () => floor.floor(),
      machine: () => this.machineName(),
      announce: () => this.team.announceRecords(),
      notify: (event) => ctx.waitUntil(this.notifications.notify(event)),
      relay: { events: (serverId, events) => this.acpConnections.agentEvents(serverId, events), gone: (serverId) => this.acpConnections.agentGone(serverId) },
      appendAudit: (entries) => teamStub(env).appendAuditBatch(entries),
      waitUntil: (work) => ctx.waitUntil(work),
      wake: (at) => alarmBy(ctx.storage, at),
      sseIdleCloseMs: config.sseIdleCloseMs,
      promptTimeoutMs: config.acpTimeoutMs,
      startTimeoutMs: config.installTimeoutMs,
      taskChanged: (task) => this.attempts.taskChanged(task),
    });
    ({ recorder: this.sessions, calls: this.sessionCalls, gate: this.gate, tasks: this.tasks, subscriptions: this.recorderSubscriptions } = sessions);
    ({ connections: this.acpConnections, gateway: this.acp } = acpTransport(
      {
        post: (req, timeoutMs, restore) => this.sessionCalls.acpPost(req, timeoutMs, restore),
        stop: (serverId) => tunnel.call("acp.delete", { serverId }, 30_000).then(() => undefined),
        sockets: (tag) => ctx.getWebSockets(tag),
        hides,
      },
      {
        call: (op, args) => tunnel.call(op, args),
        reachable: () => tunnel.reachable(),
        accept: (ws, tags) => ctx.acceptWebSocket(ws, tags),
        acpTimeoutMs: config.acpTimeoutMs,
      },
      this.holders,
    ));
    this.attempts = new MachineAttempts(ctx.storage, {
      machine: () => this.machineName(),
      tasks: (call) => this.tasks.handle(call),
      session: (id) => this.sessions.reads.get(id),
      call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
      report: async (report) => void (await teamStub(env).groupCall({ op: "report", report })),
      waitUntil: (work) => ctx.waitUntil(work),
    });
    this.previews = new MachinePreviews({ tunnel, storage: ctx.storage, holders: this.holders, ...sockets });
    this.logins = new MachineLogins(ctx.storage, {
      call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
      send: (frame) => tunnel.send(frame),
      retry: (agent) => this.sessionCalls.retryLogins(agent, config.acpTimeoutMs),
      waitUntil: (work) => ctx.waitUntil(work),
      machine: () => this.machineName(),
      notify: (event) => ctx.waitUntil(this.notifications.notify(event)),
    });
    this.subscribers = new Subscribers([this.readers, this.viewers, this.recorderSubscriptions, this.logins.watch]);
    this.clients = new ClientSockets(this.viewers, this.acpConnections, this.holders, (ws) => ctx.getTags(ws), config.acpTimeoutMs, this.previews.streams);
    this.lifecycle = new SidecarLifecycle({
      ...{ tunnel, team: this.team, notifications: this.notifications, sessions: this.sessions, tasks: this.tasks, floor },
      ...{ subscribers: this.subscribers, previews: this.previews.streams, acpConnections: this.acpConnections },
      drainPrompts: () => this.sessionCalls.queue.drainAll(),
      machineName: () => this.machineName(),
      waitUntil: (work) => ctx.waitUntil(work),
    });
    // Heartbeats are answered by the runtime: an idle machine's object is never woken by them.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_FRAME, PONG_FRAME));
  }

  // ---------------- sockets: the tunnel, terminal viewers, ACP's WebSocket form ----------------

  override async fetch(request: Request): Promise<Response> {
    const asked = objectRequestOf(request);
    if (asked.kind === "terminal") return this.clients.attachTerminal(request, asked.process, asked.holder);
    if (asked.kind === "acp-socket") return this.acp.acceptSocket(request, asked.agent, asked.holder);
    if (asked.kind === "preview") return this.previews.fetch(request, asked);
    return acceptSidecar(request, {
      name: this.ctx.id.name ?? null,
      generation: () => this.tokens.current(),
      sockets: (tag) => this.ctx.getWebSockets(tag),
      accept: (ws, tags) => this.ctx.acceptWebSocket(ws, tags),
    });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // One look at the tags (not the attachment) tells the sidecar's messages, the hot path, from the rest.
    if (await this.clients.message(ws, this.ctx.getTags(ws), message)) return;
    await readSidecarFrame(ws, message, {
      answered: (frame) => this.tunnel.answered(frame),
      subscribers: this.subscribers,
      hello: (frame) => this.lifecycle.hello(ws, frame),
      preview: (frame) => this.previews.streams.fromSidecar(frame),
      ports: () => this.sessions.portsChanged(),
      login: (agent) => this.ctx.waitUntil(this.logins.flowChanged(agent)),
    });
  }

  /** A socket closed: a viewer detaches, an ACP connection's or a preview's socket ends it, the tunnel's starts the grace. */
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

  override async alarm(): Promise<void> {
    await this.notifications.sendDue();
    await this.gate.deadlines.due();
    await this.tasks.due();
    const next = this.holders.sweep();
    if (next !== null) await alarmBy(this.ctx.storage, next);
  }
}
