/**
 * The session records and transcripts of one machine (docs/architecture.md, "Sessions"): the machine's
 * object tells it what crosses the relay (the client's messages, the agent's answers to them, what the
 * agent writes through a subscription of its own to every ACP server's stream, and when an agent or the
 * sidecar went away), and it turns that into the session's state machine. Three parts, each with one job:
 * what an ACP message means is pure (`@agent-runtime/protocol/acp-meaning`), what is kept in memory and
 * written in batches is `LiveSessions`, and the SQL is `SessionStore`. The team's object is never on
 * this path.
 */
import {
  answerOf,
  exitDescription,
  paramsOf,
  pendingRequestOf,
  promptText,
  stopReasonOf,
  turnChangesOf,
  WAITING_METHODS,
  worktreeOf,
} from "@agent-runtime/protocol/acp-meaning";
import { isJsonRpcRequest, type JsonRpcId, type JsonRpcMessage } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import { SANDBOX_BLOCKED_METHOD } from "@agent-runtime/protocol/sandbox";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { PendingRequest, QueuedPrompt, Session } from "@agent-runtime/protocol/sessions";
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import { effectOf } from "./transcript";
import type { RuntimeEvent } from "../notifications/events";
import { type LiveSession, LiveSessions, type SessionListener, type SessionsWatcher } from "./live-sessions";
import { SessionReads } from "./session-reads";
import { SessionStore } from "./session-store";
import type { Ruled } from "../policy/permission-gate";
import { recordClientAnswer, recordRuled, recordWaiting } from "./permission-records";
import { LoginRecords, turnNeedsLogin } from "./login-records";
import { CatchUp } from "./catch-up";
import { turnUsage, usageUpdated } from "./usage-records";
import type { Cost } from "@agent-runtime/protocol/usage";
import { InitializeAnswers, serverRestored, serverStarted } from "./server-records";
import { recordSandboxBlocked } from "./sandbox-records";

export type { SessionListener } from "./live-sessions";

/** The requests whose answers the recorder reads (`answered`). */
const RECORDED_ANSWERS = new Set(["initialize", "authenticate", "session/new", "session/load", "session/resume", "session/prompt", "session/close"]);
export type { RestorePlan } from "./session-reads";

export interface RecorderHost {
  machine(): string;
  /** Whether the machine's sidecar is connected now: a session of a machine that is away reads as `offline`. */
  online(): boolean;
  /** Called once, when this machine records its first session (the team lists only such machines). */
  firstSession(): void;
  /** What a person away may want to hear of (notifications): a question, a turn's end. */
  events(event: RuntimeEvent): void;
  /** A session's queued prompts, as its record shows them. */
  queuedOf(id: string): QueuedPrompt[];
  /** A line of the team's audit log for what a session's sandbox refused. */
  sandboxAudit?(session: Session, target: string, reason: string): void;
  /** The agent reported its session's cost so far (a task holds it against its `maxCostUsd`). */
  costReported(session: string, cost: Cost): void;
  /** The permission policy's word on an agent's request (policy/permission-gate.ts): a question's is only its deadline; null: a person is asked. */
  judge(serverId: string, seq: number, session: Session, id: JsonRpcId, params: Record<string, unknown>, pending: PendingRequest): Ruled | null;
}

export class SessionRecorder {
  private readonly sessions: LiveSessions;
  /** What the machine's object reads (records, pages, transcripts, restore plans): session-reads.ts. */
  readonly reads: SessionReads;

  private readonly events: (event: RuntimeEvent) => void;
  private readonly sandboxAudit: RecorderHost["sandboxAudit"];
  private readonly judge: RecorderHost["judge"];
  private readonly costReported: RecorderHost["costReported"];
  /** Sessions that wait for their agent's login (login-records.ts). */
  readonly logins: LoginRecords;
  /** Answers waiting for the stream to reach what the agent wrote before them (`reached`). */
  private readonly catchingUp = new CatchUp();
  /** What each server's agent said in its `initialize` answer (server-records.ts). */
  private readonly initializeAnswers: InitializeAnswers;

  constructor(storage: DurableObjectStorage, host: RecorderHost) {
    this.sessions = new LiveSessions(new SessionStore(storage), host.machine, host.online, host.firstSession, host.queuedOf);
    this.reads = new SessionReads(this.sessions);
    this.events = host.events;
    this.sandboxAudit = host.sandboxAudit?.bind(host);
    this.judge = host.judge;
    this.costReported = host.costReported;
    this.logins = new LoginRecords(this.sessions, host.events);
    this.initializeAnswers = new InitializeAnswers(this.sessions, (serverId, result) => this.logins.initialized(serverId, result));
  }

  private get store(): SessionStore {
    return this.sessions.store;
  }

  // ---------------- what crosses the relay ----------------

  /** A client started a server with `?agent=`, in this sandbox (sandbox/server-sandbox.ts): a restart asks for the same one. */
  serverStarted(serverId: string, agent: AgentId, sandbox: SessionSandbox): void {
    serverStarted(this.sessions, serverId, agent, sandbox);
  }

  /** A server's agent started again (a restore) in this sandbox: the server and the sessions it reattached say so. */
  serverRestored(serverId: string, sandbox: SessionSandbox, reattached: string[]): void {
    serverRestored(this.sessions, serverId, sandbox, reattached);
  }

  /**
   * Resolves once the recorder has what the agent wrote up to `seq` of a server's stream (or after
   * `timeoutMs`): a turn's end is recorded after its last updates (its usage_update, its last words).
   */
  reached(serverId: string, seq: number, timeoutMs = 1000): Promise<void> {
    return this.catchingUp.wait(serverId, seq, this.sessions.server(serverId)?.cursor ?? null, timeoutMs);
  }

  /** Where a server started again numbers its messages from (after everything recorded of it). */
  firstSeqOf(serverId: string): number | undefined {
    const server = this.sessions.server(serverId);
    return server ? server.cursor + 1 : undefined;
  }

  /**
   * A client's message on its way to the agent; answers the message to send (the first prompt of a
   * continued session carries the earlier conversation's digest).
   */
  clientMessage(serverId: string, message: JsonRpcMessage, now = Date.now()): JsonRpcMessage {
    if (message.method === "session/prompt" && isJsonRpcRequest(message)) {
      const params = paramsOf(message);
      const session = this.sessions.byAcpId(serverId, String(params.sessionId));
      if (!session) return message;
      const { row, tail } = session;
      const text = promptText(params.prompt);
      const primer = row.primer;
      row.primer = null;
      // The transcript holds what the agent was sent: with a continuation's digest, that too.
      tail.add("prompt", now, { text: primer ? `${primer}${text}` : text });
      row.title ??= text.slice(0, 200) || null;
      row.turn_started_at = now;
      row.failure = null;
      this.sessions.setState(session, "running", now);
      if (!primer) return message;
      return { ...message, params: { ...params, prompt: [{ type: "text", text: primer }, ...(Array.isArray(params.prompt) ? params.prompt : [])] } };
    }
    if (message.method === undefined && message.id !== undefined) recordClientAnswer(this.sessions, serverId, message, now);
    return message;
  }

  /**
   * The agent answered a client's request (or the runtime's own). A session its agent refused for want of a
   * login is recorded as one: its record is returned (the client's answer names it).
   */
  answered(serverId: string, request: JsonRpcMessage, body: string, who: string, now = Date.now()): Session | null {
    const method = request.method;
    // Only these answers change a record: any other is relayed without the recorder parsing it.
    if (typeof method !== "string" || !RECORDED_ANSWERS.has(method)) return null;
    const params = paramsOf(request);
    if (method === "initialize") {
      this.initializeAnswers.answered(serverId, request.id, params, body);
      return null;
    }
    const answer = answerOf(body);
    if (method === "session/new") {
      const result = typeof answer.result === "object" && answer.result !== null ? answer.result : undefined;
      const login = this.logins.answered(serverId, request, body, result, who, now);
      if (login.handled) return login.needsLogin ?? null;
    }
    if (method === "authenticate") {
      const server = this.sessions.server(serverId);
      if (server && answer.error === undefined && typeof params.methodId === "string") this.sessions.serverChanged({ ...server, auth_method: params.methodId });
    } else if (method === "session/new" || method === "session/load" || method === "session/resume")
      this.sessionOpened(serverId, method, params, answer, who, now);
    else if (method === "session/prompt") this.turnEnded(serverId, params, answer, body, now);
    else if (method === "session/close") {
      const session = this.sessions.byAcpId(serverId, String(params.sessionId));
      if (session && answer.error === undefined) this.sessions.setState(session, "closed", now);
    }
    return null;
  }

  private sessionOpened(
    serverId: string,
    method: string,
    params: Record<string, unknown>,
    answer: { result?: unknown; error?: string },
    who: string,
    now: number,
  ): void {
    if (answer.error !== undefined) {
      const known = this.sessions.byAcpId(serverId, String(params.sessionId));
      if (known) known.replaying = false;
      return;
    }
    const result = answer.result;
    const acpId =
      method === "session/new" ? (typeof result === "object" && result !== null && "sessionId" in result ? result.sessionId : undefined) : params.sessionId;
    if (typeof acpId !== "string" || typeof params.cwd !== "string") return;
    const known = this.sessions.byAcpId(serverId, acpId);
    if (known) {
      known.replaying = false;
      known.row.cwd = params.cwd;
      // Loaded again into a server started since: it runs in that server's sandbox now.
      known.row.sandbox = this.sessions.server(serverId)?.sandbox ?? known.row.sandbox;
      if (known.row.state === "failed" || known.row.state === "closed") known.row.failure = null;
      this.sessions.setState(known, "idle", now);
      return;
    }
    const server = this.sessions.server(serverId);
    if (!server) return; // a server started before this object recorded servers: its agent is unknown here
    // A session that asked for a worktree runs there: the machine's answer names the folder it used.
    const { cwd = params.cwd, ...worktree } = worktreeOf(answer.result) ?? {};
    const mcpServers = Array.isArray(params.mcpServers) ? params.mcpServers : [];
    this.sessions.create(server, acpId, cwd, mcpServers, who, now, "branch" in worktree ? worktree : null);
  }

  private turnEnded(serverId: string, params: Record<string, unknown>, answer: { result?: unknown; error?: string }, body: string, now: number): void {
    const session = this.sessions.byAcpId(serverId, String(params.sessionId));
    if (!session || (answer.error !== undefined && turnNeedsLogin(this.sessions, this.logins, session, { body, error: answer.error }, this.events, now)))
      return;
    const started = session.row.turn_started_at;
    const durationMs = started ? now - started : null;
    const stopReason = answer.error === undefined ? stopReasonOf(answer.result) : null;
    const changes = answer.error === undefined ? turnChangesOf(answer.result) : null;
    const lastLine = session.tail.lastTextLine();
    const usage = answer.error === undefined ? turnUsage(session, answer.result, now) : null;
    if (answer.error !== undefined) session.tail.add("error", now, { text: answer.error });
    else session.tail.add("stop", now, { data: { stopReason, durationMs, ...(changes ? { changes } : {}), ...(usage ? { usage } : {}) } });
    if (changes) session.row.last_changes = JSON.stringify(changes);
    session.row.pending = null;
    session.row.turn_started_at = null;
    this.sessions.setState(session, "idle", now);
    const record = this.sessions.toSession(session.row);
    if (answer.error !== undefined) this.events({ type: "turn.failed", machine: record.machine, session: record, message: answer.error });
    else this.events({ type: "turn.finished", machine: record.machine, session: record, stopReason, durationMs, lastLine, changes, usage });
  }

  /** A client's `session/load` is on its way: a session recorded already does not get its history twice. */
  loading(serverId: string, acpSessionId: string): void {
    const session = this.sessions.byAcpId(serverId, acpSessionId);
    if (session && session.row.entries + (session.tail.hasUnsaved ? 1 : 0) > 0) session.replaying = true;
  }

  /** A client's call did not reach an answer: a turn cut short by the agent's or the sidecar's end failed. */
  callFailed(serverId: string, request: JsonRpcMessage, problem: ProblemInit, now = Date.now()): void {
    if (request.method !== "session/prompt") return;
    const session = this.sessions.byAcpId(serverId, String(paramsOf(request).sessionId));
    if (!session || (session.row.state !== "running" && session.row.state !== "waiting")) return;
    session.tail.add("error", now, { text: problem.detail });
    if (problem.code === "timeout") return; // the caller stopped waiting: the turn may well go on, and its stream tells its end
    const ended = ["agent_process_exited", "machine_restarted", "machine_offline"].includes(problem.code);
    if (!ended) {
      // Refused before it reached the agent (a session that cannot be reattached, a bad message): no turn ran.
      session.row.turn_started_at = null;
      this.sessions.setState(session, "idle", now);
      return;
    }
    const stderr = problem.extensions?.stderr;
    this.turnFailed(session, JSON.stringify({ message: problem.detail, ...(typeof stderr === "string" ? { stderr } : {}) }), problem.detail, now);
  }

  private turnFailed(session: LiveSession, failure: string, message: string, now: number): void {
    session.row.failure = failure;
    session.row.pending = null;
    session.row.turn_started_at = null;
    this.sessions.setState(session, "failed", now);
    const record = this.sessions.toSession(session.row);
    this.events({ type: "turn.failed", machine: record.machine, session: record, message });
  }

  /** What the agent wrote (its subscription to the server's stream): updates and requests to the person. */
  agentEvents(serverId: string, events: [number, string][], now = Date.now()): void {
    const server = this.sessions.server(serverId);
    for (const [seq, text] of events) {
      if (server && seq > server.cursor) server.cursor = seq;
      let message: { method?: unknown; id?: unknown; params?: unknown };
      try {
        message = JSON.parse(text);
      } catch {
        continue;
      }
      if (typeof message !== "object" || message === null) continue;
      const params = paramsOf(message);
      if (typeof params.sessionId !== "string") continue;
      const session = this.sessions.byAcpId(serverId, params.sessionId);
      if (!session || session.replaying) continue;
      if (message.method === SANDBOX_BLOCKED_METHOD) {
        recordSandboxBlocked(this.sessions, session, params, now, { audit: this.sandboxAudit, events: this.events });
        continue;
      }
      if (message.method === "session/update") {
        const usage = usageUpdated(session, params.update);
        if (usage) {
          if (usage.cost) this.costReported(session.row.id, usage.cost);
          continue;
        }
        const effect = effectOf(params.update);
        if (effect.type === "ignore") continue;
        if (effect.type === "title") {
          session.row.title = effect.title.slice(0, 200);
          session.row.title_from_agent = 1;
          session.dirty = true;
          this.sessions.notifyRecord(session);
          continue;
        }
        session.tail.apply(effect, now);
        session.row.last_activity = now;
        session.dirty = true;
      } else if (
        typeof message.method === "string" &&
        WAITING_METHODS.has(message.method) &&
        (typeof message.id === "string" || typeof message.id === "number")
      ) {
        const pending = pendingRequestOf(message.method, message.id, params, now);
        // The policy's word: a permission's rule, or a question's deadline.
        const ruled = this.judge(serverId, seq, this.sessions.toSession(session.row), message.id, params, pending);
        if (ruled?.answered && ruled.verdict) recordRuled(session, pending, ruled.verdict, ruled.answered, now);
        else recordWaiting(this.sessions, session, ruled?.deadline ? { ...pending, deadline: ruled.deadline } : pending, now, this.events);
      }
    }
    if (server) this.sessions.serverChanged(server);
    this.sessions.deliver();
    this.sessions.scheduleFlush();
    if (server) this.catchingUp.reached(serverId, server.cursor);
  }

  /** The agent's process is gone (it exited, was stopped idle, or the sidecar restarted): its turns in progress failed. */
  serverEnded(serverId: string, endJson: string, now = Date.now()): void {
    const how = exitDescription(endJson);
    const message = how ? `the agent exited (${how}) during the turn` : "the agent's process went away during the turn";
    for (const session of this.sessions.turningOf(serverId)) {
      session.tail.add("error", now, { text: message });
      this.turnFailed(session, JSON.stringify({ message }), message, now);
    }
  }

  /** A session reattached by the runtime could not be: it stays readable, and `continue` is its way on. */
  notResumable(serverId: string, acpSessionId: string, why: string): void {
    const session = this.sessions.byAcpId(serverId, acpSessionId);
    if (!session) return;
    session.row.resumable = 0;
    session.tail.add("notice", Date.now(), { text: `could not reattach the session: ${why}` });
    session.dirty = true;
    this.sessions.scheduleFlush(true);
  }

  // ---------------- what the machine's object asks ----------------

  /** The session `continue` started from `from`: it remembers where it came from, and its first prompt carries `primer`. */
  continued(newId: string, from: string, primer: string): void {
    this.sessions.continued(newId, from, primer);
  }

  close(id: string, purge: boolean, now = Date.now()): Session | null {
    return this.sessions.close(id, purge, now);
  }

  /** The session's followers get its record again (its queue changed). */
  refresh(id: string): void {
    const session = this.sessions.session(id);
    if (session) this.sessions.notifyRecord(session);
  }

  /** A line of the runtime's own in the session's transcript (a prompt queued or cancelled). */
  note(id: string, text: string, now = Date.now()): void {
    const session = this.sessions.session(id);
    if (!session) return;
    session.tail.add("notice", now, { text });
    session.dirty = true;
    this.sessions.deliver();
    this.sessions.scheduleFlush(true);
  }

  /** The machine came or went: every followed session's record reads differently (offline, or back). */
  machineChanged(): void {
    this.sessions.notifyFollowed();
  }

  /** What listens on the machine changed: the watchers of its sessions are told (the dashboard reads its ports again). */
  portsChanged(): void {
    this.sessions.notifyPorts();
  }

  listen(id: string, listener: SessionListener): () => void {
    return this.sessions.listen(id, listener);
  }

  watch(watcher: SessionsWatcher): () => void {
    return this.sessions.watch(watcher);
  }

  /** Write what changed now (the tunnel is going: what is in memory is written before the machine is away). */
  flush(): void {
    this.sessions.flush();
  }
}
