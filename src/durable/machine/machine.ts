/**
 * One Durable Object per machine (docs/architecture.md, "The machine object"). It owns the sidecar's
 * WebSocket (hibernation API) and tells each message where it goes; each feature's work is its own class,
 * wired here to the tunnel: calls in flight (`Tunnel`), SSE readers and terminal viewers (one subscriber
 * model), sessions (`SessionRecorder`, `SessionCalls`), ACP's remote transport (`AcpConnections`), the
 * team's documents (`applyDocuments`), notifications (`MachineNotifications`) and the machine's token
 * generation (`TokenGeneration`).
 *
 * What must not be lost across a dropped tunnel lives in two places by design:
 *  - calls in flight stay here, and are re-sent (same id) when the sidecar reconnects;
 *    the sidecar answers a repeated id from its memory instead of running it twice.
 *  - stream readers remember the last sequence they delivered, and re-subscribe from it.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import { settings } from "../../settings";
import { problemResponse } from "../../lib/problem-response";
import { parseSidecarFrame, PING_FRAME, PONG_FRAME, type SidecarFrame, type StreamRef, subsOf } from "@agent-runtime/protocol/frames";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { JsonRpcMessage } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { AcpServerList } from "@agent-runtime/protocol/acp";
import type { DeliveryAttempt, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import type { DiscoveredSession, PermissionAnswer, Session, SessionFilter, TranscriptPage } from "@agent-runtime/protocol/sessions";
import { attachmentOf, SIDECAR_TAG, sendFrame, Tunnel } from "./tunnel";
import { teamStub, tokenStub } from "../stubs";
import { deploymentCatalog } from "../../agents-registry/deployment";
import { applyDocuments, type RecordedVersions } from "../config/config-apply";
import type { TeamDocuments } from "../config/team-documents";
import { fileResponse, upload, type UploadBody } from "../files/file-transfer";
import { SseReaders } from "../streams/reader-registry";
import { Subscribers } from "../streams/subscribers";
import { SessionRecorder } from "../sessions/recorder";
import { type AcpPostRequest, SessionCalls } from "../sessions/session-calls";
import { RecorderSubscriptions } from "../sessions/recorder-subscriptions";
import { Deliverer } from "../notifications/deliverer";
import { MachineNotifications } from "../notifications/machine-notifications";
import { TERMINAL_PATH_PREFIX, TERMINAL_TAG, TerminalViewers, viewerOf } from "../terminals/terminal-viewers";
import { TokenGeneration } from "../tokens/token-generation";
import { ACP_SOCKET_PATH, ACP_SOCKET_TAG, AcpConnections, acpSocketOf } from "../acp-transport/connection-registry";
import { closeTextOf, holderOf, StreamHolder, StreamHolders } from "../streams/stream-holders";
import { Caller } from "../acp-transport/ownership";
import { AcpGateway } from "../acp-transport/acp-gateway";
import { acceptSidecar, greet } from "./sidecar-connection";

export type CallOutcome<T> = Outcome<T>;

export class MachineObject extends DurableObject<Env> {
  private readonly tunnel: Tunnel;
  private readonly readers: SseReaders;
  private readonly viewers: TerminalViewers;
  /** The session recorder's subscriptions to the ACP servers clients talk to. */
  private readonly recorderSubscriptions: RecorderSubscriptions;
  /** Everyone who receives the machine's streams: SSE readers, terminal viewers, the recorder (docs/architecture.md, "One subscriber model"). */
  private readonly subscribers: Subscribers;
  private readonly sessions: SessionRecorder;
  private readonly sessionCalls: SessionCalls;
  private readonly notifications: MachineNotifications;
  private readonly tokens: TokenGeneration;
  /** Who holds each live stream: they end with the token that opened them (docs/architecture.md, "Streams end with their token"). */
  private readonly holders: StreamHolders;
  /** Whether the team knows this machine has records (sessions, deliveries) to list: asked of storage once. */
  private recordsAnnounced: boolean | null = null;
  /** ACP's remote transport (`/acp`): its connections, fed by the recorder's subscriptions. */
  private readonly acpConnections: AcpConnections;
  /** Every way into an ACP server, each checked against who owns it. */
  private readonly acp: AcpGateway;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const config = settings(env);
    const tunnel = new Tunnel({
      sockets: () => ctx.getWebSockets(SIDECAR_TAG),
      lastPingMs: (ws) => ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null,
      halfOpen: (ws) => ctx.waitUntil(this.onTunnelGone(ws, 1001)),
      away: (problem) => this.machineAway(problem),
      graceMs: config.reconnectGraceMs,
    });
    this.tunnel = tunnel;
    const sidecar = {
      send: (frame: Parameters<Tunnel["send"]>[0]) => tunnel.send(frame),
      reachable: () => tunnel.reachable(),
      newId: () => tunnel.newId(),
    };
    this.readers = new SseReaders({ ...sidecar, idleCloseMs: config.sseIdleCloseMs, acceptMs: config.reconnectGraceMs });
    this.viewers = new TerminalViewers({
      ...sidecar,
      sockets: (tag) => ctx.getWebSockets(tag),
      accept: (ws, tags) => ctx.acceptWebSocket(ws, tags),
      call: (op, args) => tunnel.call(op, args),
    });
    this.notifications = new MachineNotifications(
      ctx.storage,
      new Deliverer(ctx.storage, {
        wake: (at) => this.wakeBy(at),
        vapid: config.vapid,
        gone: (id) => teamStub(env).dropSubscription(id),
        backoffMs: config.notifyBackoffMs,
        allowPrivate: config.notifyAllowPrivate,
      }),
      () => this.announceRecords(),
      (work) => ctx.waitUntil(work),
    );
    this.tokens = new TokenGeneration(ctx.storage, () => ctx.getWebSockets(SIDECAR_TAG));
    this.holders = new StreamHolders({
      sockets: (tag) => ctx.getWebSockets(tag),
      tagsOf: (ws) => ctx.getTags(ws),
      endSocket: (ws, problem) => this.endSocket(ws, problem),
      wake: (at) => this.wakeBy(at),
      announce: (tokenId) => tokenStub(env, tokenId).streamsOn(this.machineName(), Date.now()),
    });
    this.sessions = new SessionRecorder(
      ctx.storage,
      () => this.machineName(),
      () => tunnel.live() !== null,
      () => this.announceRecords(),
      (event) => ctx.waitUntil(this.notifications.notify(event)),
    );
    this.sessionCalls = new SessionCalls(this.sessions, {
      call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
      online: () => tunnel.live() !== null,
      record: (serverId) => {
        const frame = this.recorderSubscriptions.follow(serverId);
        if (frame) tunnel.send(frame);
      },
      instance: () => tunnel.instance,
      sseIdleCloseMs: config.sseIdleCloseMs,
    });
    this.acpConnections = new AcpConnections({
      post: (req, timeoutMs, restore) => this.sessionCalls.acpPost(req, timeoutMs, restore),
      stop: async (serverId) => {
        await tunnel.call("acp.delete", { serverId }, 30_000);
      },
      sockets: (tag) => ctx.getWebSockets(tag),
    });
    this.acp = new AcpGateway(this.acpConnections, this.holders, {
      post: (req, timeoutMs) => this.sessionCalls.acpPost(req, timeoutMs),
      call: (op, args) => tunnel.call(op, args),
      reachable: () => tunnel.reachable(),
      accept: (ws, tags) => ctx.acceptWebSocket(ws, tags),
      acpTimeoutMs: config.acpTimeoutMs,
    });
    this.recorderSubscriptions = new RecorderSubscriptions({
      events: (serverId, events) => {
        this.sessions.agentEvents(serverId, events);
        this.acpConnections.agentEvents(serverId, events);
      },
      ended: (serverId, endJson) => {
        this.sessions.serverEnded(serverId, endJson);
        this.acpConnections.agentGone(serverId);
      },
      after: (serverId) => (this.sessions.firstSeqOf(serverId) ?? 1) - 1,
    });
    this.subscribers = new Subscribers([this.readers, this.viewers, this.recorderSubscriptions]);
    // Heartbeats are answered by the runtime: an idle machine's object is never woken by them.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_FRAME, PONG_FRAME));
  }

  // ---------------- sockets: the tunnel, terminal viewers, ACP's WebSocket form ----------------

  override async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path.startsWith(TERMINAL_PATH_PREFIX)) {
      const holder = holderOf(request);
      if (!holder) return problemResponse({ code: "invalid_request", detail: "a terminal is opened for someone: the route names its holder" });
      return this.viewers.attach(request, decodeURIComponent(path.slice(TERMINAL_PATH_PREFIX.length)), this.holders.socketTags(holder));
    }
    if (path === ACP_SOCKET_PATH) return this.acp.acceptSocket(request);
    return acceptSidecar(request, {
      name: this.ctx.id.name ?? null,
      generation: () => this.tokens.current(),
      sockets: (tag) => this.ctx.getWebSockets(tag),
      accept: (ws, tags) => this.ctx.acceptWebSocket(ws, tags),
    });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // One look at the tags (not the attachment) tells the sidecar's messages, the hot path, from the rest.
    const tags = this.ctx.getTags(ws);
    if ((tags.includes(TERMINAL_TAG) || tags.includes(ACP_SOCKET_TAG)) && this.holders.socketExpired(ws)) return;
    if (tags.includes(TERMINAL_TAG)) {
      const viewer = viewerOf(ws);
      if (viewer) return this.viewers.message(ws, viewer, message);
      return;
    }
    if (tags.includes(ACP_SOCKET_TAG)) {
      const acp = acpSocketOf(ws);
      if (acp) return this.acpConnections.socketMessage(ws, acp, message, settings(this.env).acpTimeoutMs);
      return;
    }
    const parsed = parseSidecarFrame(message);
    if (!parsed.ok) {
      // A sidecar that sends what we cannot read is told so, and it is logged: never dropped silently.
      console.error(`machine tunnel: ${parsed.error}`);
      sendFrame(ws, { t: "bad", error: parsed.error });
      return;
    }
    const frame = parsed.frame;
    switch (frame.t) {
      case "res":
      case "err":
        this.tunnel.answered(frame);
        return;
      case "bad":
        console.error(`machine tunnel: the sidecar could not read a frame: ${frame.error}`);
        return;
      // One batch may be for several subscriptions of the same stream (`also`): read once, handed to each.
      case "ev":
        for (const sub of subsOf(frame)) this.subscribers.deliver(sub, frame.events, frame.gap);
        return;
      case "out":
        for (const sub of subsOf(frame)) this.subscribers.output(sub, frame.pieces, frame.bytes);
        return;
      case "end":
        this.subscribers.end(frame.sub, frame.end);
        return;
      case "hello":
        await this.onHello(ws, frame);
        return;
    }
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    await this.socketGone(ws, code);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.socketGone(ws, 1011);
  }

  /** A socket closed: a viewer detaches, an ACP connection's socket ends it, the tunnel's starts the grace. */
  private async socketGone(ws: WebSocket, code: number): Promise<void> {
    const viewer = viewerOf(ws);
    if (viewer) return this.viewers.detach(ws, viewer);
    const acp = acpSocketOf(ws);
    if (acp) return this.acpConnections.socketClosed(acp);
    await this.onTunnelGone(ws, code);
  }

  private async onHello(ws: WebSocket, hello: Extract<SidecarFrame, { t: "hello" }>): Promise<void> {
    const attachment = greet(ws, hello);
    if (!attachment) return;
    // One call to the team per connect: it records the machine and answers with the team's documents. The
    // welcome follows it, so a sidecar told "connected" is also listed as connected.
    const registered = await teamStub(this.env)
      .machineConnected({ id: attachment.machine, connectedAtMs: attachment.connectedAtMs, sidecarVersion: hello.sidecarVersion, platform: hello.platform })
      .catch((err: unknown) => {
        console.error(`machine '${attachment.machine}' connected but the team did not record it:`, err);
        return null;
      });
    sendFrame(ws, { t: "welcome", machine: attachment.machine, sidecar: sidecarVersionAdvice(hello.sidecarVersion) });
    if (registered) await this.notifications.keep(registered.subscriptions);
    // Back after people were told it went away: they are told it is back.
    await this.notifications.cameBack(attachment.machine);
    this.resumeAfterHello(ws, hello.bootId ?? null);
    if (!registered) return;
    // Every machine gets the team's documents when it connects (the sidecar skips a version it applied already).
    this.ctx.waitUntil(this.applyDocuments(registered.documents, registered.recorded));
  }

  /**
   * After a hello: calls and streams go on. The same sidecar instance gets what was in flight again (it
   * answers a call it ran already from memory, never twice). A restarted instance never sees a call meant
   * for the one that is gone: those fail with 503 machine_restarted, and its readers are told at once.
   * Calls made while no sidecar was there go out now.
   */
  private resumeAfterHello(ws: WebSocket, bootId: string | null): void {
    const { restarted } = this.tunnel.greeted(ws, bootId);
    if (restarted) {
      this.subscribers.fail({ code: "machine_restarted", detail: "the machine's sidecar restarted: this stream's source (its process or agent) is gone" });
      this.acpConnections.allAgentsGone();
    }
    for (const frame of this.subscribers.subscribeFrames()) sendFrame(ws, frame);
  }

  private async onTunnelGone(ws: WebSocket, code: number): Promise<void> {
    this.sessions.flush(); // what the recorder holds in memory is written before the machine is away
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
    } catch {
      // already closed
    }
    if (!this.tunnel.closed(code)) return; // replaced by a newer socket: nothing changed for callers
    const machine = attachmentOf(ws)?.machine;
    if (machine) await teamStub(this.env).machineDisconnected(machine, Date.now());
  }

  /** Away for good, not a blip (it did not come back within the grace): calls failed; streams fail, people are told once. */
  private machineAway(problem: ProblemInit): void {
    this.ctx.waitUntil(this.notifications.wentAway(this.machineName()));
    this.subscribers.fail(problem);
  }

  /** The machine this object holds: its own name (it is created by idFromName), else its sidecar's word. */
  private machineName(): string {
    if (this.ctx.id.name) return this.ctx.id.name;
    const ws = this.ctx.getWebSockets(SIDECAR_TAG)[0];
    return (ws && attachmentOf(ws)?.machine) || "unknown";
  }

  /**
   * Once per machine: the team lists sessions and deliveries only of machines that have some (so this is
   * not per session, nor per message).
   */
  private announceRecords(): void {
    this.ctx.waitUntil(
      (async () => {
        this.recordsAnnounced ??= (await this.ctx.storage.get<boolean>("records-announced")) === true;
        if (this.recordsAnnounced) return;
        const machine = this.machineName();
        await teamStub(this.env).machineHasSessions(machine);
        this.recordsAnnounced = true;
        await this.ctx.storage.put("records-announced", true);
      })().catch((err: unknown) => console.error("the team did not record that this machine has sessions:", err)),
    );
  }

  private applyDocuments(documents: TeamDocuments, recorded?: RecordedVersions): Promise<void> {
    const tunnel = this.tunnel;
    return applyDocuments(
      {
        call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
        connectedMachine: () => {
          const ws = tunnel.live();
          return (ws && attachmentOf(ws)?.machine) || null;
        },
        team: () => teamStub(this.env),
        catalog: () => deploymentCatalog(this.env),
        installTimeoutMs: settings(this.env).installTimeoutMs,
      },
      documents,
      recorded,
    );
  }

  /** The sockets of one whose token was revoked or expired end with their kind's last word. */
  private endSocket(ws: WebSocket, problem: ProblemInit): void {
    const tags = this.ctx.getTags(ws);
    const acp = acpSocketOf(ws);
    if (tags.includes(TERMINAL_TAG)) this.viewers.endWith(ws, problem);
    else if (acp) this.acpConnections.endSocket(ws, acp, closeTextOf(problem));
  }

  /** The one alarm serves notifications and the expiry of held sockets: it rings by the earliest. */
  private async wakeBy(atMs: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > atMs) await this.ctx.storage.setAlarm(atMs);
  }

  override async alarm(): Promise<void> {
    await this.notifications.sendDue();
    const next = this.holders.sweep();
    if (next !== null) await this.wakeBy(next);
  }

  // ---------------- RPC surface used by the worker's routes (one line each: the work is in the feature's class) ----------------

  isOnline(): boolean {
    return this.tunnel.live() !== null;
  }

  /** Call an operation on the sidecar and wait for its answer (or a problem: offline, timeout); `timeoutMs` defaults to the operation's deadline. */
  async call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<CallOutcome<OpResult<N>>> {
    return this.tunnel.call(op, args, timeoutMs);
  }

  /** An SSE reader of one of the machine's streams from sequence `after` on (or a problem response), held by `caller`. */
  async openStream(stream: StreamRef, after: number, caller: Caller): Promise<Response> {
    const who = Caller.parse(caller);
    const refused = stream.kind === "acp" ? this.acp.refusedStream(stream.serverId, who) : null;
    if (refused) return problemResponse(refused);
    return this.readers.open(stream, after, (body) => this.holders.holdBody(who, body));
  }

  /** A token was revoked: every stream it holds here (SSE, terminals, ACP sockets) ends now, saying why. */
  endStreamsOf(tokenId: string, name: string): number {
    return this.holders.endHeldBy(tokenId, name);
  }

  /** A file on the machine as a streamed response (or a problem response), read in pieces (durable/files/file-transfer.ts). */
  async readFile(path: string): Promise<Response> {
    return fileResponse(
      (op, args) => this.tunnel.call(op, args),
      path,
      (work) => this.ctx.waitUntil(work),
    );
  }

  /** A request body written over `path` in one rename once staged. */
  async writeFile(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.commit">>> {
    return upload(
      (op, args) => this.tunnel.call(op, args),
      body,
      declaredBytes,
      this.tunnel.uploadWindow(),
      (last) => this.tunnel.call("fs.commit", { ...last, path }),
    );
  }

  /** A tar archive unpacked into the folder `path` once staged. */
  async unpackArchive(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.unpack">>> {
    return upload(
      (op, args) => this.tunnel.call(op, args),
      body,
      declaredBytes,
      this.tunnel.uploadWindow(),
      (last) => this.tunnel.call("fs.unpack", { ...last, path }),
    );
  }

  /** The team's fan-out hands each machine the documents; the apply runs after this call has returned. */
  scheduleConfigApply(documents: TeamDocuments): void {
    this.ctx.waitUntil(this.applyDocuments(documents));
  }

  async tokenGeneration(): Promise<number> {
    return this.tokens.current();
  }

  async revokeTokens(): Promise<number> {
    return this.tokens.revoke();
  }

  async setSubscriptions(subscriptions: SubscriptionTarget[]): Promise<void> {
    await this.notifications.keep(subscriptions);
  }

  listDeliveries(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.notifications.list(subscriptions, limit);
  }

  async acpPost(req: AcpPostRequest, timeoutMs: number, caller: Caller): Promise<CallOutcome<AcpPostResult>> {
    return this.acp.post(req, timeoutMs, caller);
  }

  async acpStop(serverId: string, caller: Caller): Promise<CallOutcome<void>> {
    return this.acp.stop(serverId, caller);
  }

  async acpList(caller: Caller): Promise<CallOutcome<AcpServerList>> {
    return this.acp.list(caller);
  }

  async acpConnect(agent: AgentId, message: JsonRpcMessage, caller: Caller): Promise<CallOutcome<{ connectionId: string; body: string }>> {
    return this.acp.connect(agent, message, caller);
  }

  acpConnectionPost(connectionId: string, session: string | null, message: JsonRpcMessage, caller: Caller): CallOutcome<void> {
    return this.acp.connectionPost(connectionId, session, message, caller);
  }

  acpConnectionStream(connectionId: string, session: string | null, caller: Caller): Response {
    return this.acp.connectionStream(connectionId, session, caller);
  }

  async acpConnectionClose(connectionId: string, caller: Caller): Promise<CallOutcome<void>> {
    return this.acp.connectionClose(connectionId, caller);
  }

  listSessions(filter: SessionFilter, cursor: { atMs: number; id: string } | null, limit: number): { sessions: Session[]; more: boolean } {
    return this.sessionCalls.list(filter, cursor, limit);
  }

  getSession(id: string): Session | null {
    return this.sessionCalls.get(id);
  }

  readTranscript(id: string, after: number, limit: number): TranscriptPage | null {
    return this.sessionCalls.transcript(id, after, limit);
  }

  followTranscript(id: string, after: number, holder: StreamHolder): Response {
    const who = StreamHolder.parse(holder);
    return this.sessionCalls.followTranscript(id, after, (body) => this.holders.holdBody(who, body));
  }

  async closeSession(id: string, purge: boolean, who: string): Promise<CallOutcome<Session>> {
    return this.sessionCalls.close(id, purge, who);
  }

  async continueSession(id: string, who: string, timeoutMs: number): Promise<CallOutcome<Session>> {
    return this.sessionCalls.continue(id, who, timeoutMs);
  }

  async answerPermission(id: string, answer: PermissionAnswer, who: string): Promise<CallOutcome<Session>> {
    return this.sessionCalls.answerPermission(id, answer, who);
  }

  async discoverSessions(agents: AgentId[], cwd: string | undefined): Promise<CallOutcome<DiscoveredSession[]>> {
    return this.sessionCalls.discover(agents, cwd);
  }
}
