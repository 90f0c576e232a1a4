/**
 * What the machine object does for sessions (docs/architecture.md, "Sessions"): every client message for
 * an ACP server goes through `acpPost` (recorded, sent, its answer recorded; a gone agent restored first
 * when the message belongs to a recorded session), and the runtime's own calls on a session (close,
 * continue, answer a permission, discover) are built from it. The recorder keeps the records; this class
 * is the calls made with them, so the object only wires it to its tunnel.
 */
import { isJsonRpcRequest, type JsonRpcId, type JsonRpcMessage, sessionIdIn } from "@agent-runtime/protocol/acp";
import type { PermissionPolicy } from "@agent-runtime/protocol/policy";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { DiscoveredSession, ElicitationAnswer, PermissionAnswer, Session, SessionFilter, TranscriptPage } from "@agent-runtime/protocol/sessions";
import type { WorkOrigin } from "@agent-runtime/protocol/sandbox";
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { UsageRow } from "@agent-runtime/protocol/usage";
import { answerOf } from "@agent-runtime/protocol/acp-meaning";
import { problemResponse } from "../../lib/problem-response";
import type { SseBody } from "../streams/sse-body";
import { TranscriptFollower } from "./follower";
import { SessionsWatch } from "./sessions-watch";
import { PromptQueue } from "./prompt-queue";
import { withLoginData } from "./login-records";
import { acpPostOutcome, type AcpPostOutcome } from "./acp-post-outcome";
import type { PromptQueueStore } from "./prompt-queue-store";
import type { SessionRecorder } from "./recorder";
import { policyAnswerRefusal, sessionPolicyIn, startedSessionId } from "./session-policy";

/** What these calls need of the machine object. */
export interface SessionHost {
  call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<Outcome<OpResult<N>>>;
  /** Whether a sidecar is connected now. */
  online(): boolean;
  /** The recorder follows this server's stream (if it does not already), from what it recorded last. */
  record(serverId: string): void;
  /** This object's instance id: the runtime's own request ids never collide with another instance's. */
  instance(): string;
  machine(): string;
  /** Did the permission policy answer this request of the agent's? (A client's answer to it is then refused.) */
  answeredByPolicy(serverId: string, id: JsonRpcId): boolean;
  /** A session's own permission policy, as its `session/new` named it. */
  keepSessionPolicy(serverId: string, acpSessionId: string, policy: PermissionPolicy): void;
  sseIdleCloseMs: number;
  /** How long a queued prompt's turn may take (ACP_TIMEOUT_MS). */
  promptTimeoutMs: number;
  /** The sandbox a start of an agent server asks for (sandbox/server-sandbox.ts). */
  sandboxes: {
    decide(agent: AgentId, origin: WorkOrigin): SessionSandbox;
    withFloor(sandbox: SessionSandbox): SessionSandbox;
  };
}

export interface AcpPostRequest {
  serverId: string;
  /** Set by a client's first message to a server: the agent it starts. */
  agent?: AgentId;
  /** With `agent`: where the work comes from (the team's sandbox rules match on it); a person's session when absent. */
  origin?: WorkOrigin;
  message: JsonRpcMessage;
  who: string;
}

/** A client's message as the relay's route hands it to the machine's object: its JSON text, read there once. */
export type AcpPostText = Omit<AcpPostRequest, "message" | "origin"> & { text: string };

export class SessionCalls {
  private runtimeRequests = 0;
  /** Prompts waiting for the machine or for the turn before them (`POST /v1/sessions/{id}/prompt`). */
  readonly queue: PromptQueue;

  constructor(
    private readonly sessions: SessionRecorder,
    private readonly host: SessionHost,
    queued: PromptQueueStore,
  ) {
    this.queue = new PromptQueue(queued, {
      online: () => host.online(),
      machine: () => host.machine(),
      record: (id) => sessions.reads.get(id),
      send: (record, message, who) => this.acpPost({ serverId: record.serverId, message, who }, host.promptTimeoutMs),
      changed: (id) => sessions.refresh(id),
      note: (id, text) => sessions.note(id, text),
    });
  }

  /**
   * One client message for an ACP server (the relay, `POST /v1/acp/{server_id}`): recorded, sent, its
   * answer recorded. When the server's agent is gone (a restarted sidecar, an agent that exited or was
   * stopped idle) and the message belongs to a recorded session, the agent is started again and the
   * session reattached first: the client keeps its server id and sessionId.
   */
  async acpPost(
    req: AcpPostRequest,
    timeoutMs: number,
    /** The runtime's own message (continue): start the server's agent again whatever the message is for. */
    restoreAny = false,
  ): Promise<AcpPostOutcome> {
    const { serverId, agent, who } = req;
    const refused = policyAnswerRefusal(req.message, (id) => this.host.answeredByPolicy(serverId, id));
    if (refused) return { ok: false, problem: refused };
    const ownPolicy = sessionPolicyIn(req.message);
    if (ownPolicy && !ownPolicy.ok) return ownPolicy;
    if (agent) {
      // A start of the server's agent: the team's rules decide its sandbox now, and the record keeps it.
      this.sessions.serverStarted(serverId, agent, this.host.sandboxes.decide(agent, req.origin ?? "session"));
    }
    const message = this.sessions.clientMessage(serverId, req.message);
    const awaitId = isJsonRpcRequest(message) ? message.id : null;
    const target = sessionIdIn(message.params);
    if (message.method === "session/load" && target) this.sessions.loading(serverId, target);
    const firstSeq = agent ? this.sessions.firstSeqOf(serverId) : undefined;
    const method = "method" in message && typeof message.method === "string" ? message.method : null;
    const params: unknown = "params" in message ? message.params : undefined;
    const startsSession = method === "session/new" || method === "session/load";
    const cwd = startsSession && typeof params === "object" && params !== null && "cwd" in params && typeof params.cwd === "string" ? params.cwd : undefined;
    // Every call that may start the agent or a session on it carries the server's sandbox (the sidecar
    // applies the stricter of it and its floor); a restore below asks for the same one.
    const sandbox = agent || startsSession || method === "session/resume" ? this.sessions.reads.sandboxOf(serverId)?.requested : undefined;
    const args = {
      serverId,
      ...(agent ? { agent } : {}),
      message: JSON.stringify(message),
      method,
      ...(cwd !== undefined ? { cwd } : {}),
      awaitId,
      ...(firstSeq ? { firstSeq } : {}),
      ...(sandbox ? { sandbox } : {}),
    };
    let outcome = acpPostOutcome(await this.host.call("acp.post", args, timeoutMs));
    // Only a message for a session recorded on this server brings its agent back: any other message for a
    // server whose agent is gone finds the id free, as before (its first POST names the agent again).
    if (!outcome.ok && "notRunning" in outcome && (restoreAny || (target && this.sessions.reads.recordOf(serverId, target)))) {
      const restored = await this.restoreServer(serverId, target);
      outcome = restored.ok ? acpPostOutcome(await this.host.call("acp.post", args, timeoutMs)) : restored;
    }
    if (outcome.ok) {
      this.host.record(serverId);
      const answer = outcome.value;
      if (awaitId !== null && answer.status === 200) {
        // A turn's end is recorded after what the agent wrote before it (its usage, its last words).
        if (message.method === "session/prompt" && answer.afterSeq !== undefined) await this.sessions.reached(serverId, answer.afterSeq);
        const needsLogin = this.sessions.answered(serverId, message, answer.body, who);
        // A session refused for want of a login is recorded: the client's answer says which, and how to log its agent in.
        if (needsLogin) outcome = { ok: true, value: { ...answer, body: withLoginData(answer.body, needsLogin) } };
      }
      const started = ownPolicy?.value ? startedSessionId(outcome.value) : null;
      if (ownPolicy?.value && started) this.host.keepSessionPolicy(serverId, started, ownPolicy.value);
    } else {
      this.sessions.callFailed(serverId, message, outcome.problem);
    }
    // A turn ended: what its session has queued goes next.
    const turned = message.method === "session/prompt" && target ? this.sessions.reads.recordOf(serverId, target) : null;
    if (turned && turned.queued.length > 0) void this.queue.drain(turned.id);
    return outcome;
  }

  /**
   * Start a server's agent again as its client set it up and reattach its sessions. A message for a
   * session the agent cannot reattach is a 409 `session_not_resumable` (its way on is `continue`).
   */
  private async restoreServer(serverId: string, target: string | null): Promise<Outcome<void>> {
    const plan = this.sessions.reads.restorePlan(serverId);
    if (!plan) {
      return {
        ok: false,
        problem: { code: "invalid_request", detail: `server '${serverId}' is not running: the first POST must name its agent with ?agent=<id>` },
      };
    }
    const notResumable = (why: string): Outcome<void> => {
      const record = target ? this.sessions.reads.recordOf(serverId, target) : null;
      return {
        ok: false,
        problem: {
          code: "session_not_resumable",
          detail: `session '${target}' cannot be reattached: ${why}${record ? `; POST /v1/sessions/${record.id}/continue starts a new session with its conversation` : ""}`,
          extensions: record ? { session: record.id } : {},
        },
      };
    };
    if (target && !plan.canResume && !plan.canLoad && this.sessions.reads.recordOf(serverId, target)) {
      // Its agent can neither: start nothing now (another message may still start the agent afresh).
      return notResumable(`agent '${plan.agent}' can neither resume nor load a session`);
    }
    const reattach = plan.canResume || plan.canLoad ? plan.sessions : [];
    // The sandbox it was started in, never a newer decision (a resumed session keeps its sandbox); a
    // server recorded before sandboxes gets one now, as a person's session (a person's message brought it back).
    const sandbox = plan.sandbox ? this.host.sandboxes.withFloor(plan.sandbox) : this.host.sandboxes.decide(plan.agent, "session");
    const restored = await this.host.call("acp.restore", {
      serverId,
      agent: plan.agent,
      initialize: plan.initialize,
      authMethodId: plan.authMethodId,
      sessions: reattach,
      firstSeq: plan.firstSeq,
      sandbox: sandbox.requested,
    });
    if (!restored.ok) return restored;
    this.sessions.serverRestored(
      serverId,
      sandbox,
      restored.value.sessions.filter((s) => s.how !== "none").map((s) => s.sessionId),
    );
    this.host.record(serverId);
    for (const s of restored.value.sessions) if (s.how === "none") this.sessions.notResumable(serverId, s.sessionId, s.error ?? "the agent refused");
    const failed = target ? restored.value.sessions.find((s) => s.sessionId === target && s.how === "none") : undefined;
    if (failed) return notResumable(failed.error ?? "the agent refused");
    return { ok: true, value: undefined };
  }

  /** A page of this machine's sessions, newest activity first. */
  list(filter: SessionFilter, cursor: { atMs: number; id: string } | null, limit: number): { sessions: Session[]; more: boolean } {
    return this.sessions.reads.list(filter, cursor, limit);
  }

  get(id: string): Session | null {
    return this.sessions.reads.get(id);
  }

  transcript(id: string, after: number, limit: number): TranscriptPage | null {
    return this.sessions.reads.transcript(id, after, limit);
  }

  /** The transcript as a live stream (or a 404 problem). */
  followTranscript(id: string, after: number, hold: (body: SseBody) => void): Response {
    const record = this.sessions.reads.get(id);
    // Entry `after` itself again: it may have grown since the reader saw it.
    const page = this.sessions.reads.transcript(id, Math.max(0, after - 1), 10_000);
    if (!record || !page) return problemResponse({ code: "not_found", detail: `no session '${id}' on this machine` });
    return new TranscriptFollower(this.host.sseIdleCloseMs).start(record, page.entries, (l) => this.sessions.listen(id, l), hold);
  }

  /** Every session record of this machine as a live stream of changes (the route merges machines). */
  watch(hold: (body: SseBody) => void): Response {
    return new SessionsWatch(this.host.machine(), this.host.sseIdleCloseMs).start((w) => this.sessions.watch(w), hold);
  }

  /** A request of the runtime's own to an agent (close, continue), with an id no client uses. */
  private runtimeRequest(method: string, params: Record<string, unknown>): JsonRpcMessage {
    return { jsonrpc: "2.0", id: `agent-runtime-${this.host.instance()}-${this.runtimeRequests++}`, method, params };
  }

  /**
   * Close a session: `session/close` where the agent has it, and its server stopped when no other open
   * session uses it. `purge` also drops the transcript. The record stays (closed).
   */
  async close(id: string, purge: boolean, who: string): Promise<Outcome<Session>> {
    const record = this.sessions.reads.get(id);
    if (!record) return notFound(id);
    const live = this.host.online();
    if (live && record.state !== "closed" && this.sessions.reads.canClose(record.serverId)) {
      const running = await this.host.call("acp.list", {});
      if (running.ok && running.value.servers.some((s) => s.serverId === record.serverId)) {
        await this.acpPost({ serverId: record.serverId, message: this.runtimeRequest("session/close", { sessionId: record.sessionId }), who }, 60_000);
      }
    }
    // A purge asks the agent to forget it too, where the agent can (its own files of the conversation).
    if (live && purge && record.state !== "needs_login" && this.sessions.reads.canDelete(record.serverId)) {
      await this.acpPost({ serverId: record.serverId, message: this.runtimeRequest("session/delete", { sessionId: record.sessionId }), who }, 60_000, true);
    }
    const closed = this.sessions.close(id, purge)!;
    if (live && this.sessions.reads.openSessionsOf(record.serverId) === 0) {
      const stopped = await this.host.call("acp.delete", { serverId: record.serverId });
      if (!stopped.ok) return stopped;
    }
    return { ok: true, value: closed };
  }

  /**
   * Continue a session that cannot be reattached (or any other): a new session of the same agent in the
   * same folder, on the same server, whose first prompt will carry a bounded digest of the conversation.
   */
  async continue(id: string, who: string, timeoutMs: number): Promise<Outcome<Session>> {
    const record = this.sessions.reads.get(id);
    const digest = record ? this.sessions.reads.digest(id) : null;
    if (!record || digest === null) return notFound(id);
    const started = await this.acpPost(
      { serverId: record.serverId, message: this.runtimeRequest("session/new", this.sessions.reads.startParams(id)!), who },
      timeoutMs,
      true,
    );
    if (!started.ok) return started;
    const sessionId = startedSessionId(started.value);
    if (sessionId === null) {
      const why = (started.value.status === 200 ? answerOf(started.value.body).error : undefined) ?? "no sessionId in its answer";
      return { ok: false, problem: { code: "stream_error", detail: `the agent did not start a new session: ${why}` } };
    }
    const created = this.sessions.reads.recordOf(record.serverId, sessionId);
    if (!created) return { ok: false, problem: { code: "internal", detail: "the new session was not recorded" } };
    this.sessions.continued(created.id, id, digest);
    return { ok: true, value: this.sessions.reads.get(created.id)! };
  }

  /** Answer a session's pending permission request (`POST /v1/sessions/{id}/permission`) as its client would. */
  async answerPermission(id: string, answer: PermissionAnswer, who: string): Promise<Outcome<Session>> {
    const record = this.sessions.reads.get(id);
    if (!record) return notFound(id);
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
    return { ok: true, value: this.sessions.reads.get(id)! };
  }

  usage(fromDay: string, toDay: string, createdBy: string | null): UsageRow[] {
    return this.sessions.reads.usage(fromDay, toDay, createdBy);
  }

  /** Answer a session's pending question (`POST /v1/sessions/{id}/elicitation`) as its client would. */
  async answerElicitation(id: string, answer: ElicitationAnswer, who: string): Promise<Outcome<Session>> {
    const record = this.sessions.reads.get(id);
    if (!record) return notFound(id);
    const pending = record.pending;
    if (pending?.kind !== "elicitation" || (answer.requestId !== undefined && JSON.stringify(pending.requestId) !== JSON.stringify(answer.requestId))) {
      return {
        ok: false,
        problem: { code: "conflict", detail: `session '${id}' is not waiting for an answer to a question (answered, cancelled or never asked)` },
      };
    }
    if (answer.content && answer.action !== "accept") {
      return { ok: false, problem: { code: "invalid_request", detail: "content goes with accept only" } };
    }
    const result = answer.action === "accept" ? { action: "accept", ...(answer.content ? { content: answer.content } : {}) } : { action: answer.action };
    const sent = await this.acpPost({ serverId: record.serverId, message: { jsonrpc: "2.0", id: pending.requestId, result }, who }, 60_000);
    if (!sent.ok) return sent;
    return { ok: true, value: this.sessions.reads.get(id)! };
  }

  /**
   * An agent was logged in: each session that waited for it is started now (its `session/new` sent again,
   * its agent's process started afresh so that it reads the login), and becomes a session like any other.
   */
  async retryLogins(agent: AgentId | null, timeoutMs: number): Promise<Session[]> {
    const started: Session[] = [];
    for (const record of this.sessions.reads.needingLogin(agent)) {
      // Only a server whose every session waits for the login is stopped: nothing of anyone's is cut short.
      if (
        this.sessions.reads.openSessionsOf(record.serverId) ===
        this.sessions.reads.needingLogin(record.agent).filter((s) => s.serverId === record.serverId).length
      ) {
        await this.host.call("acp.delete", { serverId: record.serverId }, 30_000);
      }
      const message = this.runtimeRequest("session/new", this.sessions.reads.startParams(record.id)!);
      this.sessions.logins.retrying(message.id!, record.id);
      const sent = await this.acpPost({ serverId: record.serverId, message, who: record.createdBy }, timeoutMs, true);
      const now = this.sessions.reads.get(record.id);
      if (sent.ok && now?.state === "idle") started.push(now);
    }
    return started;
  }

  /** The sessions agents keep on this machine (`session/list`), with the runtime's record of each where it has one. */
  async discover(agents: AgentId[], cwd: string | undefined): Promise<Outcome<DiscoveredSession[]>> {
    const found: DiscoveredSession[] = [];
    for (const agent of agents) {
      const listed = await this.host.call("acp.discover", { agent, ...(cwd ? { cwd } : {}) });
      if (!listed.ok) return listed;
      for (const s of listed.value.sessions) {
        found.push({ agent, ...s, recorded: this.sessions.reads.findByAcp(agent, s.sessionId)?.id ?? null });
      }
    }
    return { ok: true, value: found };
  }
}

function notFound(id: string): Outcome<never> {
  return { ok: false, problem: { code: "not_found", detail: `no session '${id}' on this machine` } };
}
