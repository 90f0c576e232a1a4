/**
 * One Durable Object per machine (docs/architecture.md, "The machine object"). It owns the sidecar's
 * WebSocket (hibernation API) and tells each message where it goes; each feature's work is its own class,
 * wired here to the tunnel. Calls in flight stay here and are re-sent (same id) when the sidecar reconnects
 * (it answers a repeated id from memory, never running it twice); stream readers re-subscribe from the last
 * sequence they delivered.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import { settings } from "../../settings";
import { problemResponse } from "../../lib/problem-response";
import { PING_FRAME, PONG_FRAME, type StreamRef } from "@agent-runtime/protocol/frames";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { AcpServerList, JsonRpcMessage } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { DeliveryAttempt, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import type {
  DiscoveredSession,
  ElicitationAnswer,
  PermissionAnswer,
  PromptEntry,
  Session,
  SessionFilter,
  TranscriptPage,
} from "@agent-runtime/protocol/sessions";
import type { LoginRemoved, LoginRequest, LoginStarted } from "@agent-runtime/protocol/logins";
import type { UsageRow } from "@agent-runtime/protocol/usage";
import { MachineLogins } from "../logins/machine-logins";
import { attachmentOf, SIDECAR_TAG, Tunnel } from "./tunnel";
import { teamStub, tokenStub } from "../stubs";
import type { TeamDocuments } from "../config/team-documents";
import type { UploadBody } from "../files/file-transfer";
import { MachineFiles } from "../files/machine-files";
import { MachineTeam } from "./machine-team";
import { ClientSockets } from "./client-sockets";
import { SseReaders } from "../streams/reader-registry";
import { Subscribers } from "../streams/subscribers";
import type { SessionRecorder } from "../sessions/recorder";
import type { AcpPostRequest, SessionCalls } from "../sessions/session-calls";
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
import { StreamHolder, StreamHolders } from "../streams/stream-holders";
import { Caller } from "../acp-transport/ownership";
import { type AcpGateway, acpTransport } from "../acp-transport/acp-gateway";
import { acceptSidecar, readSidecarFrame } from "./sidecar-connection";
import { type Task, TaskCall, type TaskPage } from "@agent-runtime/protocol/tasks";
import { MachinePreviews } from "../preview/machine-previews";
import { SidecarLifecycle } from "./sidecar-lifecycle";
import { MachineFloor } from "../sandbox/machine-floor";
import { MachineAttempts } from "../attempts/machine-attempts";
import { MachineAttemptCall, type MachineAttemptAnswer } from "@agent-runtime/protocol/attempts";

export type CallOutcome<T> = Outcome<T>;

export class MachineObject extends DurableObject<Env> {
  // Each feature's class (docs/architecture.md, "The machine object"): subscribers receive the machine's streams,
  // holders end streams with their token, the gate judges permission requests, clients are the other sockets.
  private readonly tunnel: Tunnel;
  private readonly readers: SseReaders;
  private readonly viewers: TerminalViewers;
  private readonly recorderSubscriptions: RecorderSubscriptions;
  private readonly subscribers: Subscribers;
  private readonly sessions: SessionRecorder;
  private readonly sessionCalls: SessionCalls;
  private readonly gate: PermissionGate;
  private readonly tasks: TaskRunner;
  private readonly notifications: MachineNotifications;
  private readonly tokens: TokenGeneration;
  private readonly holders: StreamHolders;
  private readonly team: MachineTeam;
  private readonly files: MachineFiles;
  private readonly clients: ClientSockets;
  private readonly acpConnections: AcpConnections;
  private readonly acp: AcpGateway;
  private readonly previews: MachinePreviews;
  private readonly lifecycle: SidecarLifecycle;
  private readonly attempts: MachineAttempts;
  private readonly logins: MachineLogins;

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
  private machineName(): string {
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
    const refused = this.acp.refusedStream(stream, who);
    return refused ? problemResponse(refused) : this.readers.open(stream, after, (body) => this.holders.holdBody(who, body));
  }

  /** A token was revoked: every stream it holds here (SSE, terminals, ACP sockets) ends now, saying why. */
  endStreamsOf(tokenId: string, name: string): number {
    return this.holders.endHeldBy(tokenId, name) + this.previews.access.revokeHeldBy(tokenId);
  }

  mintPreview(port: number, holder: StreamHolder, kind: "grant" | "pass"): { secret: string; expiresAtMs: number } {
    return this.previews.mint(port, StreamHolder.parse(holder), kind);
  }

  redeemPreviewGrant(grant: string): { secret: string; port: number; expiresAtMs: number } | null {
    return this.previews.redeem(grant);
  }

  /** A file on the machine as a streamed response (or a problem response), read in pieces. */
  async readFile(path: string): Promise<Response> {
    return this.files.read(path);
  }

  /** A request body written over `path` in one rename once staged. */
  async writeFile(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.commit">>> {
    return this.files.write(path, body, declaredBytes);
  }

  /** A tar archive unpacked into the folder `path` once staged. */
  async unpackArchive(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.unpack">>> {
    return this.files.unpack(path, body, declaredBytes);
  }

  /** The team's fan-out hands each machine the documents; the apply runs after this call has returned. */
  scheduleConfigApply(documents: TeamDocuments): void {
    this.ctx.waitUntil(this.team.applyDocuments(documents));
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

  watchSessions(holder: StreamHolder): Response {
    return this.sessionCalls.watch((body) => this.holders.holdBody(StreamHolder.parse(holder), body));
  }

  async closeSession(id: string, purge: boolean, who: string): Promise<CallOutcome<Session>> {
    return this.sessionCalls.close(id, purge, who);
  }

  async continueSession(id: string, who: string, timeoutMs: number): Promise<CallOutcome<Session>> {
    return this.sessionCalls.continue(id, who, timeoutMs);
  }

  async queuePrompt(id: string, prompt: unknown[], who: string): Promise<CallOutcome<PromptEntry>> {
    return this.sessionCalls.queue.submit(id, prompt, who);
  }

  async cancelQueuedPrompt(id: string, entry: string): Promise<CallOutcome<PromptEntry>> {
    return this.sessionCalls.queue.cancel(id, entry);
  }

  async answerPermission(id: string, answer: PermissionAnswer, who: string): Promise<CallOutcome<Session>> {
    return this.sessionCalls.answerPermission(id, answer, who);
  }

  async answerElicitation(id: string, answer: ElicitationAnswer, who: string): Promise<CallOutcome<Session>> {
    return this.sessionCalls.answerElicitation(id, answer, who);
  }

  async agentLogin(agent: AgentId, request: LoginRequest): Promise<CallOutcome<LoginStarted>> {
    return this.logins.start(agent, request);
  }

  async agentLogout(agent: AgentId): Promise<CallOutcome<LoginRemoved>> {
    return this.logins.remove(agent);
  }

  /** Each session's usage by day within [fromDay, toDay] (GET /v1/usage sums them). */
  usageRows(fromDay: string, toDay: string, createdBy: string | null): UsageRow[] {
    return this.sessionCalls.usage(fromDay, toDay, createdBy);
  }

  /** A route's call on this machine's tasks (`TaskCall`: submit, get, list, cancel), parsed here. */
  async taskCall(call: TaskCall): Promise<CallOutcome<Task | TaskPage>> {
    return this.tasks.handle(TaskCall.parse(call));
  }

  /** The team's call on this machine's attempts of a group (`MachineAttemptCall`), parsed here. */
  async attemptCall(call: MachineAttemptCall): Promise<CallOutcome<MachineAttemptAnswer>> {
    return this.attempts.handle(MachineAttemptCall.parse(call));
  }

  async discoverSessions(agents: AgentId[], cwd: string | undefined): Promise<CallOutcome<DiscoveredSession[]>> {
    return this.sessionCalls.discover(agents, cwd);
  }
}
