/**
 * One Durable Object per machine. It holds the sidecar's WebSocket (hibernation API),
 * relays calls to it and answers them, and serves SSE readers of the machine's streams.
 *
 * What must not be lost across a dropped tunnel lives in two places by design:
 *  - calls in flight stay here, and are re-sent (same id) when the sidecar reconnects;
 *    the sidecar answers a repeated id from its memory instead of running it twice.
 *  - stream readers remember the last sequence they delivered, and re-subscribe from it.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { settings } from "../settings";
import { problemResponse } from "../lib/problem-response";
import { parseSidecarFrame, PING_FRAME, PONG_FRAME, TUNNEL_PROTOCOL_VERSION, type SidecarFrame, type StreamRef } from "@agent-runtime/protocol/frames";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { attachmentOf, offline, SIDECAR_TAG, sendFrame, setAttachment, Tunnel, type TunnelAttachment } from "./tunnel";
import { teamStub } from "./stubs";
import { deploymentCatalog } from "../agents-registry/deployment";
import { type RegistryAgent, registryIdOf } from "@agent-runtime/protocol/registry";
import { type DocumentKind, documentEtag, type StoredDocument, type TeamDocuments } from "./team-documents";
import { fileResponse, type StagedBody, stageBody, type UploadBody } from "./file-transfer";
import { SseReader } from "./sse-reader";
import { SessionRecorder } from "./sessions/recorder";
import { Deliverer } from "../notifications/deliverer";
import { hears, payloadOf, type RuntimeEvent } from "../notifications/events";
import type { DeliveryAttempt, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { TranscriptFollower } from "./sessions/follower";
import { isJsonRpcRequest, type JsonRpcMessage, sessionIdIn } from "@agent-runtime/protocol/acp";
import { AgentId } from "@agent-runtime/protocol/values";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { DiscoveredSession, PermissionAnswer, Session, SessionFilter, TranscriptPage } from "@agent-runtime/protocol/sessions";
import {
  closeViewer,
  sendControl,
  subscribeFrame,
  TERMINAL_PATH_PREFIX,
  TERMINAL_TAG,
  TerminalClientFrame,
  TerminalViewers,
  type ViewerAttachment,
  viewerOf,
  viewerTag,
} from "./terminal-viewers";
import { SubscriberMap, Subscribers } from "./subscribers";
import { RecorderSubscriptions } from "./sessions/recorder-subscriptions";
import { ACP_SOCKET_PATH, ACP_SOCKET_TAG, AcpConnections, acpSocketOf } from "../acp-transport/connections";

export type CallOutcome<T> = Outcome<T>;

export class MachineObject extends DurableObject<Env> {
  private readonly readers = new SubscriberMap<SseReader>();
  /** The session recorder's subscriptions to the ACP servers clients talk to. */
  private readonly recorderSubscriptions: RecorderSubscriptions;
  /** Everyone who receives the machine's streams: SSE readers, terminal viewers, the recorder (docs/architecture.md, "One subscriber model"). */
  private readonly subscribers: Subscribers;
  private readonly tunnel: Tunnel;
  private readonly sessions: SessionRecorder;
  /** Notifications of this machine's events, sent from its alarm (docs/architecture.md, "Notifications"). */
  private readonly deliverer: Deliverer;
  /** The subscriptions that may hear of this machine (the team's copy for it), read from storage once. */
  private subscriptions: SubscriptionTarget[] | null = null;
  /** Whether the team knows this machine has records (sessions, deliveries) to list: asked of storage once. */
  private recordsAnnounced: boolean | null = null;
  private runtimeRequests = 0;
  /** ACP's remote transport (`/acp`): its connections, fed by the recorder's subscriptions. */
  private readonly acpConnections = new AcpConnections({
    post: (req, timeoutMs, restore) => this.acpPost(req, timeoutMs, restore),
    stop: async (serverId) => {
      await this.tunnel.call("acp.delete", { serverId }, 30_000);
    },
    sockets: (tag) => this.ctx.getWebSockets(tag),
  });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.tunnel = new Tunnel({
      sockets: () => ctx.getWebSockets(SIDECAR_TAG),
      lastPingMs: (ws) => ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null,
      halfOpen: (ws) => ctx.waitUntil(this.onTunnelGone(ws, 1001)),
      away: (problem) => this.machineAway(problem),
      graceMs: settings(env).reconnectGraceMs,
    });
    this.sessions = new SessionRecorder(
      ctx.storage.sql,
      () => this.machineName(),
      () => this.tunnel.live() !== null,
      () => this.announceRecords(),
      (event) => this.ctx.waitUntil(this.notify(event)),
    );
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
    this.subscribers = new Subscribers([this.readers, new TerminalViewers((tag) => ctx.getWebSockets(tag)), this.recorderSubscriptions]);
    this.deliverer = new Deliverer(ctx.storage.sql, {
      wake: async (at) => {
        const current = await ctx.storage.getAlarm();
        if (current === null || current > at) await ctx.storage.setAlarm(at);
      },
      vapid: settings(env).vapid,
      gone: (id) => teamStub(env).dropSubscription(id),
      backoffMs: settings(env).notifyBackoffMs,
    });
    // Heartbeats are answered by the runtime: an idle machine's object is never woken by them.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_FRAME, PONG_FRAME));
  }

  // ---------------- tunnel ----------------

  override async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path.startsWith(TERMINAL_PATH_PREFIX)) return this.attachViewer(request, decodeURIComponent(path.slice(TERMINAL_PATH_PREFIX.length)));
    if (path === ACP_SOCKET_PATH) return this.acceptAcpSocket(request);
    // The object's own name is the machine (it is created by idFromName(machine)); the header is checked against it.
    const machine = this.ctx.id.name ?? request.headers.get("x-machine-id");
    if (this.ctx.id.name && request.headers.get("x-machine-id") !== this.ctx.id.name) {
      return problemResponse({ code: "invalid_request", detail: "this tunnel request is not for this machine" });
    }
    const generation = Number(request.headers.get("x-token-generation"));
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !machine || !Number.isSafeInteger(generation)) {
      return problemResponse({ code: "invalid_request", detail: "expected a WebSocket upgrade from a sidecar" });
    }
    // The one piece of per-machine trust state: tokens older than the current generation were revoked.
    if (generation < (await this.tokenGeneration())) {
      return problemResponse({ code: "token_invalid", detail: `the tokens of machine '${machine}' minted before were revoked; ask an admin for a new one` });
    }
    // A new authenticated connection replaces the old one (e.g. the sidecar restarted).
    for (const old of this.ctx.getWebSockets(SIDECAR_TAG)) {
      try {
        old.close(4000, "replaced by a newer connection of this machine");
      } catch {
        // already closing
      }
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [SIDECAR_TAG]);
    const attachment: TunnelAttachment = { machine, connectedAtMs: Date.now(), hello: false, generation, heartbeatMs: LIMITS.heartbeatMs };
    setAttachment(server, attachment);
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // One look at the tags (not the attachment) tells the sidecar's messages, the hot path, from the rest.
    const tags = this.ctx.getTags(ws);
    if (tags.includes(TERMINAL_TAG)) {
      const viewer = viewerOf(ws);
      if (viewer) return this.onViewerMessage(ws, viewer, message);
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
      case "ev":
        this.subscribers.deliver(frame.sub, frame.events, frame.gap);
        return;
      case "out":
        this.subscribers.output(frame.sub, frame.pieces, frame.bytes);
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
    const viewer = viewerOf(ws);
    if (viewer) return this.detachViewer(ws, viewer);
    const acp = acpSocketOf(ws);
    if (acp) return this.acpConnections.socketClosed(acp);
    await this.onTunnelGone(ws, code);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    const viewer = viewerOf(ws);
    if (viewer) return this.detachViewer(ws, viewer);
    const acp = acpSocketOf(ws);
    if (acp) return this.acpConnections.socketClosed(acp);
    await this.onTunnelGone(ws, 1011);
  }

  private async onHello(ws: WebSocket, hello: Extract<SidecarFrame, { t: "hello" }>): Promise<void> {
    const attachment = attachmentOf(ws);
    if (!attachment) {
      ws.close(4003, "this connection's state is unreadable; reconnect");
      return;
    }
    if (hello.protocol !== TUNNEL_PROTOCOL_VERSION || hello.machine !== attachment.machine) {
      const reason =
        hello.machine !== attachment.machine
          ? `this tunnel belongs to machine '${attachment.machine}'`
          : `tunnel protocol ${hello.protocol} is not supported (this worker speaks ${TUNNEL_PROTOCOL_VERSION}); update the sidecar`;
      sendFrame(ws, { t: "bye", reason });
      ws.close(4002, reason.slice(0, 120));
      return;
    }
    const heartbeatMs = typeof hello.heartbeatMs === "number" && hello.heartbeatMs >= 100 ? hello.heartbeatMs : LIMITS.heartbeatMs;
    setAttachment(ws, { ...attachment, hello: true, heartbeatMs });
    // One call to the team per connect: it records the machine and answers with the team's documents. The
    // welcome follows it, so a sidecar told "connected" is also listed as connected.
    const registered = await teamStub(this.env)
      .machineConnected({ id: attachment.machine, connectedAtMs: attachment.connectedAtMs, sidecarVersion: hello.sidecarVersion, platform: hello.platform })
      .catch((err: unknown) => {
        console.error(`machine '${attachment.machine}' connected but the team did not record it:`, err);
        return null;
      });
    sendFrame(ws, { t: "welcome", machine: attachment.machine, sidecar: sidecarVersionAdvice(hello.sidecarVersion) });
    if (registered) await this.keepSubscriptions(registered.subscriptions);
    // Back after people were told it went away: they are told it is back.
    if (await this.ctx.storage.get<boolean>("offline-announced")) {
      await this.ctx.storage.delete("offline-announced");
      this.ctx.waitUntil(this.notify({ type: "machine.online", machine: attachment.machine }));
    }
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
    this.ctx.waitUntil(
      (async () => {
        await this.ctx.storage.put("offline-announced", true);
        await this.notify({ type: "machine.offline", machine: this.machineName() });
      })(),
    );
    this.subscribers.fail(problem);
  }

  // ---------------- terminal viewers ----------------

  /** The route checked the process (a running tty, docs/architecture.md "Terminals"); this attaches one more viewer. */
  private attachViewer(request: Request, processId: string): Response {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !processId) {
      return problemResponse({ code: "invalid_request", detail: "expected a WebSocket upgrade for a process's terminal" });
    }
    const ws = this.tunnel.live();
    if (!ws && !this.tunnel.reachable()) return problemResponse(offline());
    const { 0: client, 1: server } = new WebSocketPair();
    const viewer: ViewerAttachment = { kind: "terminal", processId, sub: this.tunnel.newId(), after: 0, ready: false };
    const tokenId = request.headers.get("x-token-id");
    this.ctx.acceptWebSocket(server, [TERMINAL_TAG, viewerTag(viewer.sub), ...(tokenId ? [tokenTag(tokenId)] : [])]);
    server.serializeAttachment(viewer);
    if (ws) sendFrame(ws, subscribeFrame(viewer)); // else: subscribed when the sidecar is back
    return new Response(null, { status: 101, webSocket: client });
  }

  // ---------------- ACP's remote transport (`/acp`) ----------------

  /** The WebSocket form: one socket is one connection (and one agent process), hibernatable. */
  private acceptAcpSocket(request: Request): Response {
    const agent = AgentId.safeParse(new URL(request.url).searchParams.get("agent"));
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !agent.success) {
      return problemResponse({ code: "invalid_request", detail: "expected a WebSocket upgrade naming its agent" });
    }
    if (!this.tunnel.reachable()) return problemResponse(offline());
    const { serverId, tags, attachment } = this.acpConnections.socketSetup(agent.data, request.headers.get("x-who") ?? "(unknown)");
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, tags);
    server.serializeAttachment(attachment);
    return new Response(null, { status: 101, webSocket: client, headers: { "acp-connection-id": serverId } });
  }

  /** `initialize` without a connection id: the agent starts, and the connection is its server. */
  async acpConnect(agent: AgentId, message: JsonRpcMessage, owner: string, who: string): Promise<CallOutcome<{ connectionId: string; body: string }>> {
    return this.acpConnections.connect(agent, message, owner, who, settings(this.env).acpTimeoutMs);
  }

  acpConnectionPost(connectionId: string, session: string | null, message: JsonRpcMessage, owner: string, who: string): CallOutcome<void> {
    return this.acpConnections.post(connectionId, session, message, owner, who);
  }

  acpConnectionStream(connectionId: string, session: string | null, owner: string): Response {
    return this.acpConnections.stream(connectionId, session, owner);
  }

  async acpConnectionClose(connectionId: string, owner: string): Promise<CallOutcome<void>> {
    return this.acpConnections.close(connectionId, owner);
  }

  private async onViewerMessage(ws: WebSocket, viewer: ViewerAttachment, message: string | ArrayBuffer): Promise<void> {
    let frame: TerminalClientFrame;
    try {
      const parsed = TerminalClientFrame.safeParse(JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message)));
      if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? "invalid");
      frame = parsed.data;
    } catch (err) {
      sendControl(ws, { type: "error", message: `not a terminal frame (input, resize or close): ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    if (frame.type === "close") {
      closeViewer(ws, 1000, "closed by the client");
      this.detachViewer(ws, viewer);
      return;
    }
    const outcome =
      frame.type === "input"
        ? await this.tunnel.call("processes.input", { id: viewer.processId, data: frame.data, encoding: frame.encoding ?? "utf8", eof: false })
        : await this.tunnel.call("processes.resize", { id: viewer.processId, cols: frame.cols, rows: frame.rows });
    if (!outcome.ok) sendControl(ws, { type: "error", message: outcome.problem.detail });
  }

  private detachViewer(ws: WebSocket, viewer: ViewerAttachment): void {
    closeViewer(ws, 1000, "closed");
    const live = this.tunnel.live();
    if (live) sendFrame(live, { t: "unsub", sub: viewer.sub });
  }

  /** The token that opened these terminals was revoked: they close now (a terminal is the whole machine). */
  closeViewersOf(tokenId: string): number {
    const viewers = this.ctx.getWebSockets(tokenTag(tokenId));
    for (const ws of viewers) {
      sendControl(ws, { type: "error", message: "the token that opened this terminal was revoked" });
      const viewer = viewerOf(ws);
      if (viewer) this.detachViewer(ws, viewer);
      else closeViewer(ws, 1008, "revoked");
    }
    return viewers.length;
  }

  // ---------------- RPC surface used by the worker ----------------

  /**
   * The team's fan-out hands each machine the documents (so 10,000 machines never ask the team for
   * them); the apply runs after this call has returned, and its outcome is recorded when it changed.
   */
  scheduleConfigApply(documents: TeamDocuments): void {
    this.ctx.waitUntil(this.applyDocuments(documents));
  }

  /** `recorded`: the versions the team's status already shows for this machine (a reconnect), if known. */
  private async applyDocuments(
    documents: TeamDocuments,
    recorded: Record<DocumentKind, string | null> = { skills: null, mcp: null, agents: null },
  ): Promise<void> {
    const team = teamStub(this.env);
    await Promise.all([
      this.applyDocument(
        documents.skills,
        recorded.skills,
        "skills.apply",
        undefined,
        async (base) => base,
        (machine, outcome) => team.recordSkillsApplied(machine, outcome),
      ),
      this.applyDocument(
        documents.mcp,
        recorded.mcp,
        "mcp.apply",
        undefined,
        async (base) => base,
        (machine, outcome) => team.recordMcpApplied(machine, outcome),
      ),
      // Agents install from the registry's entries (the sidecar never reads the registry); installs take
      // as long as an install may.
      this.applyDocument(
        documents.agents,
        recorded.agents,
        "agents.apply",
        settings(this.env).installTimeoutMs,
        async (base) => ({ ...base, entries: await this.registryEntriesOf(Object.keys(base.config.agents)) }),
        (machine, outcome) => team.recordAgentsApplied(machine, outcome),
      ),
    ]);
  }

  /** The registry's entry for each agent named (by built-in name or registry id), where it has one. */
  private async registryEntriesOf(agents: string[]): Promise<Record<string, RegistryAgent>> {
    if (agents.length === 0) return {};
    const { agents: catalog } = await deploymentCatalog(this.env);
    const byId = new Map(catalog.map((entry) => [entry.id, entry]));
    return Object.fromEntries(
      agents.flatMap((agent) => {
        const entry = byId.get(registryIdOf(agent));
        return entry ? [[agent, entry]] : [];
      }),
    );
  }

  /** One document onto the sidecar, and its outcome to the team, unless nothing changed that the team does not know. */
  private async applyDocument<N extends "skills.apply" | "mcp.apply" | "agents.apply">(
    latest: StoredDocument<OpArgs<N>["config"]>,
    recorded: string | null,
    op: N,
    /** Unless the operation's deadline. */
    timeoutMs: number | undefined,
    argsOf: (base: { version: string; config: OpArgs<N>["config"] }) => Promise<OpArgs<N>>,
    record: (
      machine: string,
      outcome: { applied: Omit<OpResult<N>, "version" | "unchanged"> & { version: string } } | { error: string; version: number },
    ) => Promise<void>,
  ): Promise<void> {
    const ws = this.tunnel.live();
    const machine = ws ? attachmentOf(ws)?.machine : undefined;
    if (!ws || !machine || latest.version === 0) return; // applied when the machine connects; never configured: nothing to do
    const outcome = await this.tunnel.call(op, await argsOf({ version: String(latest.version), config: latest.config }), timeoutMs);
    const etag = documentEtag(latest.version);
    // A reconnect whose apply changed nothing, and whose status the team already holds: no write.
    if (outcome.ok && outcome.value.unchanged && recorded === etag) return;
    if (!outcome.ok) return record(machine, { error: outcome.problem.detail, version: latest.version });
    // The team's status is the sidecar's answer, with the document's ETag as its version.
    const { version: _applied, unchanged: _unchanged, ...status } = outcome.value;
    await record(machine, { applied: { ...status, version: etag } });
  }

  /** The generation new machine tokens are minted with; 1 until the machine's tokens are first revoked. */
  async tokenGeneration(): Promise<number> {
    return (await this.ctx.storage.get<number>("token-generation")) ?? 1;
  }

  /** Refuse every token minted so far, and close the tunnel of a sidecar that connected with one. */
  async revokeTokens(): Promise<number> {
    const generation = (await this.tokenGeneration()) + 1;
    await this.ctx.storage.put("token-generation", generation);
    for (const ws of this.ctx.getWebSockets(SIDECAR_TAG)) {
      if ((attachmentOf(ws)?.generation ?? 0) < generation) {
        try {
          ws.close(4001, "this machine's token was revoked");
        } catch {
          // already closing
        }
      }
    }
    return generation;
  }

  isOnline(): boolean {
    return this.tunnel.live() !== null;
  }

  /** Call an operation on the sidecar and wait for its answer (or a problem: offline, timeout); `timeoutMs` defaults to the operation's deadline. */
  async call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<CallOutcome<OpResult<N>>> {
    return this.tunnel.call(op, args, timeoutMs);
  }

  /** A file on the machine as a streamed response (or a problem response), read in pieces (durable/file-transfer.ts). */
  async readFile(path: string): Promise<Response> {
    return fileResponse(
      (op, args) => this.tunnel.call(op, args),
      path,
      (work) => this.ctx.waitUntil(work),
    );
  }

  /**
   * A request body written to the machine: staged in pieces, then committed over `path` in one rename
   * (`fs.commit`) or unpacked into the folder `path` as a tar archive (`fs.unpack`).
   */
  async writeFile(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.commit">>> {
    return this.staged(body, declaredBytes, (last) => this.tunnel.call("fs.commit", { ...last, path }));
  }

  async unpackArchive(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.unpack">>> {
    return this.staged(body, declaredBytes, (last) => this.tunnel.call("fs.unpack", { ...last, path }));
  }

  /** Stage all but the body's last piece, which goes with the call that uses the upload (`use`): one call for a body of one piece. */
  private async staged<R>(body: UploadBody, declaredBytes: number | null, use: (last: StagedBody) => Promise<CallOutcome<R>>): Promise<CallOutcome<R>> {
    const staged = await stageBody((op, args) => this.tunnel.call(op, args), body, declaredBytes);
    return staged.ok ? use(staged.value) : staged;
  }

  /**
   * Open an SSE reader on one of the machine's streams, from sequence `after` on.
   * Answers only once the sidecar has accepted the subscription, so an unknown stream is a 404, not an empty stream.
   */
  async openStream(stream: StreamRef, after: number): Promise<Response> {
    const ws = this.tunnel.live();
    if (!ws && !this.tunnel.reachable()) return problemResponse(offline());
    const reader = new SseReader(
      this.tunnel.newId(),
      stream,
      after,
      (sub) => {
        this.readers.delete(sub);
        const live = this.tunnel.live();
        if (live) sendFrame(live, { t: "unsub", sub });
      },
      settings(this.env).sseIdleCloseMs,
    );
    this.readers.add(reader);
    if (ws) sendFrame(ws, reader.subscribeFrame()); // else: subscribed when the sidecar is back
    const accepted = await reader.accepted(settings(this.env).reconnectGraceMs);
    if (!accepted.ok) {
      this.readers.delete(reader.sub);
      return problemResponse(accepted.problem);
    }
    return reader.response();
  }

  // ---------------- sessions (docs/architecture.md, "Sessions") ----------------

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

  // ---------------- notifications (docs/architecture.md, "Notifications") ----------------

  /** The team's fan-out: the subscriptions that may hear of this machine now. */
  async setSubscriptions(subscriptions: SubscriptionTarget[]): Promise<void> {
    await this.keepSubscriptions(subscriptions);
  }

  private async keepSubscriptions(subscriptions: SubscriptionTarget[]): Promise<void> {
    const before = this.subscriptions ?? (await this.ctx.storage.get<SubscriptionTarget[]>("subscriptions")) ?? [];
    this.subscriptions = subscriptions;
    // A reconnect that changed nothing writes nothing.
    if (JSON.stringify(before) !== JSON.stringify(subscriptions)) await this.ctx.storage.put("subscriptions", subscriptions);
  }

  /** Queue one delivery per subscription that hears of this event; the alarm sends them. */
  private async notify(event: RuntimeEvent): Promise<void> {
    this.subscriptions ??= (await this.ctx.storage.get<SubscriptionTarget[]>("subscriptions")) ?? [];
    const now = Date.now();
    const targets = this.subscriptions.filter((t) => hears(t, event.type, event.machine, now));
    if (targets.length === 0) return;
    const id = crypto.randomUUID();
    await this.deliverer.enqueue(targets.map((target) => ({ target, payload: payloadOf(event, target.baseUrl, id, now) })));
    this.announceRecords();
  }

  override async alarm(): Promise<void> {
    const next = await this.deliverer.run();
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
  }

  /** The newest delivery attempts of these subscriptions (null: all) made from this machine. */
  listDeliveries(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.deliverer.list(subscriptions, limit);
  }

  /** The recorder follows every server a client talks to, from what it recorded last. */
  private record(serverId: string): void {
    const frame = this.recorderSubscriptions.follow(serverId);
    const ws = this.tunnel.live();
    if (frame && ws) sendFrame(ws, frame);
  }

  /**
   * One client message for an ACP server (the relay, `POST /v1/acp/{server_id}`): recorded, sent, its
   * answer recorded. When the server's agent is gone (a restarted sidecar, an agent that exited or was
   * stopped idle) and the message belongs to a recorded session, the agent is started again and the
   * session reattached first: the client keeps its server id and sessionId.
   */
  async acpPost(
    req: { serverId: string; agent?: AgentId; message: JsonRpcMessage; who: string },
    timeoutMs: number,
    /** The runtime's own message (continue): start the server's agent again whatever the message is for. */
    restoreAny = false,
  ): Promise<CallOutcome<AcpPostResult>> {
    const { serverId, agent, who } = req;
    if (agent) this.sessions.serverStarted(serverId, agent);
    const message = this.sessions.clientMessage(serverId, req.message);
    const awaitId = isJsonRpcRequest(message) ? (message.id as string | number) : null;
    const target = sessionIdIn(message.params);
    if (message.method === "session/load" && target) this.sessions.loading(serverId, target);
    const firstSeq = agent ? this.sessions.firstSeqOf(serverId) : undefined;
    const method = "method" in message && typeof message.method === "string" ? message.method : null;
    const params: unknown = "params" in message ? message.params : undefined;
    const startsSession = method === "session/new" || method === "session/load";
    const cwd = startsSession && typeof params === "object" && params !== null && "cwd" in params && typeof params.cwd === "string" ? params.cwd : undefined;
    const args = {
      serverId,
      ...(agent ? { agent } : {}),
      message: JSON.stringify(message),
      method,
      ...(cwd !== undefined ? { cwd } : {}),
      awaitId,
      ...(firstSeq ? { firstSeq } : {}),
    };
    let outcome = await this.tunnel.call("acp.post", args, timeoutMs);
    // Only a message for a session recorded on this server brings its agent back: any other message for a
    // server whose agent is gone finds the id free, as before (its first POST names the agent again).
    if (!outcome.ok && outcome.problem.extensions?.notRunning === true && (restoreAny || (target && this.sessions.recordOf(serverId, target)))) {
      const restored = await this.restoreServer(serverId, target);
      outcome = restored.ok ? await this.tunnel.call("acp.post", args, timeoutMs) : restored;
    }
    if (outcome.ok) {
      this.record(serverId);
      if (awaitId !== null && outcome.value.status === 200) this.sessions.answered(serverId, message, outcome.value.body, who);
    } else {
      this.sessions.callFailed(serverId, message, outcome.problem);
    }
    return outcome;
  }

  /**
   * Start a server's agent again as its client set it up and reattach its sessions. A message for a
   * session the agent cannot reattach is a 409 `session_not_resumable` (its way on is `continue`).
   */
  private async restoreServer(serverId: string, target: string | null): Promise<CallOutcome<void>> {
    const plan = this.sessions.restorePlan(serverId);
    if (!plan) {
      return {
        ok: false,
        problem: { code: "invalid_request", detail: `server '${serverId}' is not running: the first POST must name its agent with ?agent=<id>` },
      };
    }
    const notResumable = (why: string): CallOutcome<void> => {
      const record = target ? this.sessions.recordOf(serverId, target) : null;
      return {
        ok: false,
        problem: {
          code: "session_not_resumable",
          detail: `session '${target}' cannot be reattached: ${why}${record ? `; POST /v1/sessions/${record.id}/continue starts a new session with its conversation` : ""}`,
          extensions: record ? { session: record.id } : {},
        },
      };
    };
    if (target && !plan.canResume && !plan.canLoad && this.sessions.recordOf(serverId, target)) {
      // Its agent can neither: start nothing now (another message may still start the agent afresh).
      return notResumable(`agent '${plan.agent}' can neither resume nor load a session`);
    }
    const reattach = plan.canResume || plan.canLoad ? plan.sessions : [];
    const restored = await this.tunnel.call("acp.restore", {
      serverId,
      agent: plan.agent,
      initialize: plan.initialize,
      authMethodId: plan.authMethodId,
      sessions: reattach,
      firstSeq: plan.firstSeq,
    });
    if (!restored.ok) return restored;
    this.record(serverId);
    for (const s of restored.value.sessions) if (s.how === "none") this.sessions.notResumable(serverId, s.sessionId, s.error ?? "the agent refused");
    const failed = target ? restored.value.sessions.find((s) => s.sessionId === target && s.how === "none") : undefined;
    if (failed) return notResumable(failed.error ?? "the agent refused");
    return { ok: true, value: undefined };
  }

  /** A page of this machine's sessions, newest activity first. */
  listSessions(filter: SessionFilter, cursor: { atMs: number; id: string } | null, limit: number): { sessions: Session[]; more: boolean } {
    return this.sessions.list(filter, cursor, limit);
  }

  getSession(id: string): Session | null {
    return this.sessions.get(id);
  }

  readTranscript(id: string, after: number, limit: number): TranscriptPage | null {
    return this.sessions.transcript(id, after, limit);
  }

  /** The transcript as a live stream (or a 404 problem). */
  followTranscript(id: string, after: number): Response {
    const record = this.sessions.get(id);
    // Entry `after` itself again: it may have grown since the reader saw it.
    const page = this.sessions.transcript(id, Math.max(0, after - 1), 10_000);
    if (!record || !page) return problemResponse({ code: "not_found", detail: `no session '${id}' on this machine` });
    return new TranscriptFollower(settings(this.env).sseIdleCloseMs).start(record, page.entries, (l) => this.sessions.listen(id, l));
  }

  /** A request of the runtime's own to an agent (close, continue), with an id no client uses. */
  private runtimeRequest(method: string, params: Record<string, unknown>): JsonRpcMessage {
    return { jsonrpc: "2.0", id: `agent-runtime-${this.tunnel.instance}-${this.runtimeRequests++}`, method, params };
  }

  /**
   * Close a session: `session/close` where the agent has it, and its server stopped when no other open
   * session uses it. `purge` also drops the transcript. The record stays (closed).
   */
  async closeSession(id: string, purge: boolean, who: string): Promise<CallOutcome<Session>> {
    const record = this.sessions.get(id);
    if (!record) return { ok: false, problem: { code: "not_found", detail: `no session '${id}' on this machine` } };
    const live = this.tunnel.live() !== null;
    if (live && record.state !== "closed" && this.sessions.canClose(record.serverId)) {
      const running = await this.tunnel.call("acp.list", {});
      if (running.ok && running.value.servers.some((s) => s.serverId === record.serverId)) {
        await this.acpPost({ serverId: record.serverId, message: this.runtimeRequest("session/close", { sessionId: record.sessionId }), who }, 60_000);
      }
    }
    const closed = this.sessions.close(id, purge)!;
    if (live && this.sessions.openSessionsOf(record.serverId) === 0) {
      const stopped = await this.tunnel.call("acp.delete", { serverId: record.serverId });
      if (!stopped.ok) return stopped;
    }
    return { ok: true, value: closed };
  }

  /**
   * Continue a session that cannot be reattached (or any other): a new session of the same agent in the
   * same folder, on the same server, whose first prompt will carry a bounded digest of the conversation.
   */
  async continueSession(id: string, who: string, timeoutMs: number): Promise<CallOutcome<Session>> {
    const record = this.sessions.get(id);
    const digest = record ? this.sessions.digest(id) : null;
    if (!record || digest === null) return { ok: false, problem: { code: "not_found", detail: `no session '${id}' on this machine` } };
    const started = await this.acpPost(
      { serverId: record.serverId, message: this.runtimeRequest("session/new", this.sessions.startParams(id)!), who },
      timeoutMs,
      true,
    );
    if (!started.ok) return started;
    const body = started.value.status === 200 ? (JSON.parse(started.value.body) as { result?: { sessionId?: unknown }; error?: { message?: unknown } }) : {};
    const sessionId = body.result?.sessionId;
    if (typeof sessionId !== "string") {
      return {
        ok: false,
        problem: { code: "stream_error", detail: `the agent did not start a new session: ${String(body.error?.message ?? "no sessionId in its answer")}` },
      };
    }
    const created = this.sessions.recordOf(record.serverId, sessionId);
    if (!created) return { ok: false, problem: { code: "internal", detail: "the new session was not recorded" } };
    this.sessions.continued(created.id, id, digest);
    return { ok: true, value: this.sessions.get(created.id)! };
  }

  /** Answer a session's pending permission request (`POST /v1/sessions/{id}/permission`) as its client would. */
  async answerPermission(id: string, answer: PermissionAnswer, who: string): Promise<CallOutcome<Session>> {
    const record = this.sessions.get(id);
    if (!record) return { ok: false, problem: { code: "not_found", detail: `no session '${id}' on this machine` } };
    const pending = record.pending;
    if (!pending || JSON.stringify(pending.requestId) !== JSON.stringify(answer.requestId)) {
      return {
        ok: false,
        problem: {
          code: "conflict",
          detail: `request ${JSON.stringify(answer.requestId)} of session '${id}' is not waiting for an answer (answered, cancelled or never asked)`,
        },
      };
    }
    if (answer.optionId !== null && !pending.options.some((o) => o.optionId === answer.optionId)) {
      return {
        ok: false,
        problem: {
          code: "invalid_request",
          detail: `'${answer.optionId}' is not one of this request's options: ${pending.options.map((o) => o.optionId).join(", ")}`,
        },
      };
    }
    const outcome = answer.optionId === null ? { outcome: "cancelled" } : { outcome: "selected", optionId: answer.optionId };
    const sent = await this.acpPost({ serverId: record.serverId, message: { jsonrpc: "2.0", id: pending.requestId, result: { outcome } }, who }, 60_000);
    if (!sent.ok) return sent;
    return { ok: true, value: this.sessions.get(id)! };
  }

  /** The sessions agents keep on this machine (`session/list`), with the runtime's record of each where it has one. */
  async discoverSessions(agents: AgentId[], cwd: string | undefined): Promise<CallOutcome<DiscoveredSession[]>> {
    const found: DiscoveredSession[] = [];
    for (const agent of agents) {
      const listed = await this.tunnel.call("acp.discover", { agent, ...(cwd ? { cwd } : {}) });
      if (!listed.ok) return listed;
      for (const s of listed.value.sessions) {
        found.push({ agent, ...s, recorded: this.sessions.findByAcp(agent, s.sessionId)?.id ?? null });
      }
    }
    return { ok: true, value: found };
  }
}

/** The tag of the terminals a token opened. */
function tokenTag(tokenId: string): string {
  return `tok:${tokenId}`;
}
