/**
 * The session records and transcripts of one machine, in its Durable Object's SQLite storage
 * (docs/architecture.md, "Sessions"). The machine's object tells it what crosses the relay: the client's
 * messages, the agent's answers to them, what the agent writes (through a subscription of its own to
 * every ACP server's stream) and when an agent or the sidecar went away.
 *
 * Writes are batched: a stream in full flow changes the in-memory tail of its transcript, and what
 * changed is written together at most once per FLUSH_MS (at once when a turn ends, a request waits for
 * a person, or the tunnel goes). The team's object is never on this path.
 */
import { isJsonRpcRequest, type JsonRpcMessage } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import {
  machineOfSession,
  type PendingRequest,
  type Session,
  type SessionFilter,
  type SessionState,
  TRANSCRIPT_LIMITS,
  type TranscriptEntry,
  type TranscriptPage,
} from "@agent-runtime/protocol/sessions";
import { digestOf, effectOf, TranscriptTail } from "./transcript";
import type { RuntimeEvent } from "../notifications/events";

/** How long changed entries may wait in memory before they are written (a stream in full flow: about one write batch a second). */
export const FLUSH_MS = 1_000;

type SessionRow = {
  id: string;
  acp_session_id: string;
  server_id: string;
  agent: string;
  agent_version: string | null;
  cwd: string;
  mcp_servers: string;
  title: string | null;
  title_from_agent: number;
  created_by: string;
  created_at: number;
  last_activity: number;
  state: string;
  pending: string | null;
  failure: string | null;
  resumable: number;
  continued_from: string | null;
  primer: string | null;
  next_seq: number;
  entries: number;
  bytes: number;
  compacted_through: number;
  turn_started_at: number | null;
};

type ServerRow = {
  server_id: string;
  agent: string;
  initialize: string | null;
  auth_method: string | null;
  can_resume: number;
  can_load: number;
  can_close: number;
  agent_version: string | null;
  cursor: number;
};

/** One session while this object is in memory: its row (written when dirty) and its transcript's tail. */
interface LiveSession {
  row: SessionRow;
  tail: TranscriptTail;
  dirty: boolean;
  /** A client's own `session/load` of a session whose transcript is kept already: its replay is not recorded twice. */
  replaying: boolean;
}

/** Something reading a session live: entries as they change, and the record when its state does. */
export interface SessionListener {
  entries(entries: TranscriptEntry[]): void;
  record(session: Session): void;
}

export interface RestorePlan {
  agent: AgentId;
  initialize: Record<string, unknown>;
  authMethodId: string | null;
  canResume: boolean;
  canLoad: boolean;
  sessions: { sessionId: string; cwd: string; mcpServers: Record<string, unknown>[] }[];
  firstSeq: number;
}

const ACTIVE: ReadonlySet<string> = new Set(["running", "waiting", "idle"]);

function json<T>(text: string | null): T | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function promptText(prompt: unknown): string {
  if (!Array.isArray(prompt)) return "";
  return prompt
    .map((block) => {
      const b = asRecord(block);
      return b.type === "text" && typeof b.text === "string" ? b.text : b.type === "resource_link" && typeof b.uri === "string" ? b.uri : "";
    })
    .join("")
    .trim();
}

/** The answer to a request as the agent sent it: its result, or its error's message. */
function answerOf(body: string): { result?: unknown; error?: string } {
  try {
    const parsed = asRecord(JSON.parse(body));
    if (parsed.error !== undefined) {
      const message = asRecord(parsed.error).message;
      return { error: typeof message === "string" ? message : JSON.stringify(parsed.error) };
    }
    return { result: parsed.result };
  } catch {
    return { error: "the agent's answer was not JSON" };
  }
}

function newSessionId(machine: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `ses-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}-${machine}`;
}

export class SessionRecorder {
  private readonly live = new Map<string, LiveSession>();
  /** `${serverId}\n${acpSessionId}` → runtime id. */
  private readonly byAcp = new Map<string, string | null>();
  private readonly servers = new Map<string, ServerRow>();
  private readonly dirtyServers = new Set<string>();
  private readonly listeners = new Map<string, Set<SessionListener>>();
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** The size each entry had when last written, so a grown entry's bytes are counted without reading it back. */
  private readonly savedBytes = new WeakMap<TranscriptEntry, number>();

  constructor(
    private readonly sql: SqlStorage,
    private readonly machine: () => string,
    /** Whether the machine's sidecar is connected now: a session of a machine that is away reads as `offline`. */
    private readonly online: () => boolean,
    /** Called once, when this machine records its first session (the team lists only such machines). */
    private readonly firstSession: () => void,
    /** What a person away may want to hear of (notifications): a question, a turn's end. */
    private readonly events: (event: RuntimeEvent) => void = () => {},
  ) {
    sql.exec(`CREATE TABLE IF NOT EXISTS sessions (
      id TEXT PRIMARY KEY, acp_session_id TEXT NOT NULL, server_id TEXT NOT NULL, agent TEXT NOT NULL, agent_version TEXT,
      cwd TEXT NOT NULL, mcp_servers TEXT NOT NULL, title TEXT, title_from_agent INTEGER NOT NULL DEFAULT 0,
      created_by TEXT NOT NULL, created_at INTEGER NOT NULL, last_activity INTEGER NOT NULL, state TEXT NOT NULL,
      pending TEXT, failure TEXT, resumable INTEGER NOT NULL, continued_from TEXT, primer TEXT,
      next_seq INTEGER NOT NULL, entries INTEGER NOT NULL, bytes INTEGER NOT NULL, compacted_through INTEGER NOT NULL,
      turn_started_at INTEGER
    )`);
    sql.exec(`CREATE UNIQUE INDEX IF NOT EXISTS sessions_by_acp ON sessions (server_id, acp_session_id)`);
    sql.exec(`CREATE INDEX IF NOT EXISTS sessions_by_activity ON sessions (last_activity DESC, id DESC)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS transcript (
      session_id TEXT NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, bytes INTEGER NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`);
    sql.exec(`CREATE TABLE IF NOT EXISTS acp_servers (
      server_id TEXT PRIMARY KEY, agent TEXT NOT NULL, initialize TEXT, auth_method TEXT,
      can_resume INTEGER NOT NULL DEFAULT 0, can_load INTEGER NOT NULL DEFAULT 0, can_close INTEGER NOT NULL DEFAULT 0,
      agent_version TEXT, cursor INTEGER NOT NULL DEFAULT 0
    )`);
  }

  // ---------------- what crosses the relay ----------------

  /** A client started a server with `?agent=`. */
  serverStarted(serverId: string, agent: AgentId): void {
    const server = this.server(serverId);
    if (server && server.agent === agent) return;
    this.servers.set(serverId, {
      server_id: serverId,
      agent,
      initialize: null,
      auth_method: null,
      can_resume: 0,
      can_load: 0,
      can_close: 0,
      agent_version: null,
      cursor: server?.cursor ?? 0,
    });
    this.dirtyServers.add(serverId);
    this.scheduleFlush();
  }

  /** Where a server started again numbers its messages from (after everything recorded of it). */
  firstSeqOf(serverId: string): number | undefined {
    const server = this.server(serverId);
    return server ? server.cursor + 1 : undefined;
  }

  /**
   * A client's message on its way to the agent; answers the message to send (the first prompt of a
   * continued session carries the earlier conversation's digest).
   */
  clientMessage(serverId: string, message: JsonRpcMessage, now = Date.now()): JsonRpcMessage {
    if (message.method === "session/prompt" && isJsonRpcRequest(message)) {
      const params = asRecord(message.params);
      const session = this.sessionByAcp(serverId, String(params.sessionId));
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
      this.setState(session, "running", now);
      if (!primer) return message;
      return { ...message, params: { ...params, prompt: [{ type: "text", text: primer }, ...(Array.isArray(params.prompt) ? params.prompt : [])] } };
    }
    if (message.method === undefined && message.id !== undefined) this.clientAnswered(serverId, message, now);
    return message;
  }

  /** The client answered one of the agent's requests: a permission request, if it was the one pending. */
  private clientAnswered(serverId: string, message: JsonRpcMessage, now: number): void {
    for (const session of this.liveOfServer(serverId)) {
      const pending = json<PendingRequest>(session.row.pending);
      if (!pending || JSON.stringify(pending.requestId) !== JSON.stringify(message.id)) continue;
      const outcome = asRecord(asRecord(message.result).outcome);
      const optionId = typeof outcome.optionId === "string" ? outcome.optionId : null;
      const option = pending.options.find((o) => o.optionId === optionId);
      session.tail.add("permission_answer", now, {
        data: {
          requestId: pending.requestId,
          outcome: message.error !== undefined ? "error" : (outcome.outcome ?? "cancelled"),
          optionId,
          name: option?.name ?? null,
        },
      });
      session.row.pending = null;
      this.setState(session, "running", now);
      return;
    }
  }

  /** The agent answered a client's request (or the runtime's own). */
  answered(serverId: string, request: JsonRpcMessage, body: string, who: string, now = Date.now()): void {
    const params = asRecord(request.params);
    const answer = answerOf(body);
    switch (request.method) {
      case "initialize": {
        const server = this.server(serverId);
        if (!server || answer.error !== undefined) return;
        const result = asRecord(answer.result);
        const caps = asRecord(result.agentCapabilities);
        const sessionCaps = asRecord(caps.sessionCapabilities);
        const version = asRecord(result.agentInfo).version;
        const learned = {
          initialize: JSON.stringify(params),
          can_load: caps.loadSession === true ? 1 : 0,
          can_resume: sessionCaps.resume != null ? 1 : 0,
          can_close: sessionCaps.close != null ? 1 : 0,
          agent_version: typeof version === "string" ? version.slice(0, 64) : null,
        };
        // A client that initializes again as before (a reconnect, a health check) writes nothing.
        if (Object.entries(learned).every(([key, value]) => server[key as keyof typeof learned] === value)) return;
        Object.assign(server, learned);
        this.dirtyServers.add(serverId);
        this.scheduleFlush();
        return;
      }
      case "authenticate": {
        const server = this.server(serverId);
        if (!server || answer.error !== undefined || typeof params.methodId !== "string") return;
        server.auth_method = params.methodId;
        this.dirtyServers.add(serverId);
        this.scheduleFlush();
        return;
      }
      case "session/new":
      case "session/load":
      case "session/resume": {
        if (answer.error !== undefined) {
          const known = this.sessionByAcp(serverId, String(params.sessionId));
          if (known) known.replaying = false;
          return;
        }
        const acpId = request.method === "session/new" ? asRecord(answer.result).sessionId : params.sessionId;
        if (typeof acpId !== "string" || typeof params.cwd !== "string") return;
        const known = this.sessionByAcp(serverId, acpId);
        if (known) {
          known.replaying = false;
          known.row.cwd = params.cwd;
          if (known.row.state === "failed" || known.row.state === "closed") known.row.failure = null;
          this.setState(known, "idle", now);
          return;
        }
        this.create(serverId, acpId, params, who, now);
        return;
      }
      case "session/prompt": {
        const session = this.sessionByAcp(serverId, String(params.sessionId));
        if (!session) return;
        const started = session.row.turn_started_at;
        const durationMs = started ? now - started : null;
        const stopReason =
          answer.error === undefined && typeof asRecord(answer.result).stopReason === "string" ? String(asRecord(answer.result).stopReason) : null;
        const lastLine = session.tail.lastTextLine();
        if (answer.error !== undefined) session.tail.add("error", now, { text: answer.error });
        else session.tail.add("stop", now, { data: { stopReason, durationMs } });
        session.row.pending = null;
        session.row.turn_started_at = null;
        this.setState(session, "idle", now);
        const record = this.toSession(session.row);
        if (answer.error !== undefined) this.events({ type: "turn.failed", machine: record.machine, session: record, message: answer.error });
        else this.events({ type: "turn.finished", machine: record.machine, session: record, stopReason, durationMs, lastLine });
        return;
      }
      case "session/close": {
        const session = this.sessionByAcp(serverId, String(params.sessionId));
        if (session && answer.error === undefined) this.setState(session, "closed", now);
        return;
      }
    }
  }

  /** A client's `session/load` is on its way: a session recorded already does not get its history twice. */
  loading(serverId: string, acpSessionId: string): void {
    const session = this.sessionByAcp(serverId, acpSessionId);
    if (session && session.row.entries + (session.tail.hasUnsaved ? 1 : 0) > 0) session.replaying = true;
  }

  /** A client's call did not reach an answer: a turn cut short by the agent's or the sidecar's end failed. */
  callFailed(serverId: string, request: JsonRpcMessage, problem: ProblemInit, now = Date.now()): void {
    if (request.method !== "session/prompt") return;
    const session = this.sessionByAcp(serverId, String(asRecord(request.params).sessionId));
    if (!session || (session.row.state !== "running" && session.row.state !== "waiting")) return;
    session.tail.add("error", now, { text: problem.detail });
    if (problem.code === "timeout") return; // the caller stopped waiting: the turn may well go on, and its stream tells its end
    const ended = ["agent_process_exited", "machine_restarted", "machine_offline"].includes(problem.code);
    if (!ended) {
      // Refused before it reached the agent (a session that cannot be reattached, a bad message): no turn ran.
      session.row.turn_started_at = null;
      this.setState(session, "idle", now);
      return;
    }
    const stderr = problem.extensions?.stderr;
    session.row.failure = JSON.stringify({ message: problem.detail, ...(typeof stderr === "string" ? { stderr } : {}) });
    session.row.pending = null;
    session.row.turn_started_at = null;
    this.setState(session, "failed", now);
    const record = this.toSession(session.row);
    this.events({ type: "turn.failed", machine: record.machine, session: record, message: problem.detail });
  }

  /** What the agent wrote (its subscription to the server's stream): updates and requests to the person. */
  agentEvents(serverId: string, events: [number, string][], now = Date.now()): void {
    const server = this.server(serverId);
    for (const [seq, text] of events) {
      if (server && seq > server.cursor) server.cursor = seq;
      let message: Record<string, unknown>;
      try {
        message = asRecord(JSON.parse(text));
      } catch {
        continue;
      }
      const params = asRecord(message.params);
      if (typeof params.sessionId !== "string") continue;
      const session = this.sessionByAcp(serverId, params.sessionId);
      if (!session || session.replaying) continue;
      if (message.method === "session/update") {
        const effect = effectOf(params.update);
        if (effect.type === "ignore") continue;
        if (effect.type === "title") {
          session.row.title = effect.title.slice(0, 200);
          session.row.title_from_agent = 1;
          session.dirty = true;
          this.notifyRecord(session);
          continue;
        }
        session.tail.apply(effect, now);
        session.row.last_activity = now;
        session.dirty = true;
      } else if ((message.method === "session/request_permission" || message.method === "elicitation/create") && message.id !== undefined) {
        this.waiting(session, message, params, now);
      }
    }
    if (server) this.dirtyServers.add(serverId);
    this.deliver();
    this.scheduleFlush();
  }

  private waiting(session: LiveSession, message: Record<string, unknown>, params: Record<string, unknown>, now: number): void {
    const toolCall = asRecord(params.toolCall);
    const options = Array.isArray(params.options)
      ? params.options.flatMap((o) => {
          const r = asRecord(o);
          return typeof r.optionId === "string" ? [{ optionId: r.optionId, name: String(r.name ?? r.optionId), kind: String(r.kind ?? "") }] : [];
        })
      : [];
    const permission = message.method === "session/request_permission";
    const pending: PendingRequest = {
      requestId: message.id as string | number,
      kind: permission ? "permission" : "elicitation",
      title: String((permission ? toolCall.title : params.message) ?? (permission ? "Permission requested" : "The agent asks a question")).slice(0, 500),
      toolCallId: typeof toolCall.toolCallId === "string" ? toolCall.toolCallId : null,
      options,
      atMs: now,
    };
    session.tail.add("permission", now, { data: { ...pending } });
    session.row.pending = JSON.stringify(pending);
    this.setState(session, "waiting", now);
    const record = this.toSession(session.row);
    this.events({ type: "permission.requested", machine: record.machine, session: record, permission: pending });
  }

  /** The agent's process is gone (it exited, was stopped idle, or the sidecar restarted): its turns in progress failed. */
  serverEnded(serverId: string, endJson: string, now = Date.now()): void {
    const end = asRecord(json(endJson));
    const how = typeof end.signal === "string" ? end.signal : end.exitCode !== undefined && end.exitCode !== null ? `code ${end.exitCode}` : null;
    for (const session of this.liveOfServer(serverId)) {
      if (session.row.state !== "running" && session.row.state !== "waiting") continue;
      const message = how ? `the agent exited (${how}) during the turn` : "the agent's process went away during the turn";
      session.tail.add("error", now, { text: message });
      session.row.failure = JSON.stringify({ message });
      session.row.pending = null;
      session.row.turn_started_at = null;
      this.setState(session, "failed", now);
      const record = this.toSession(session.row);
      this.events({ type: "turn.failed", machine: record.machine, session: record, message });
    }
  }

  /** A session reattached by the runtime could not be: it stays readable, and `continue` is its way on. */
  notResumable(serverId: string, acpSessionId: string, why: string): void {
    const session = this.sessionByAcp(serverId, acpSessionId);
    if (!session) return;
    session.row.resumable = 0;
    session.tail.add("notice", Date.now(), { text: `could not reattach the session: ${why}` });
    session.dirty = true;
    this.scheduleFlush(true);
  }

  // ---------------- what the machine's object asks ----------------

  /** How to start a server's agent again as its client set it up, or null when it never got that far. */
  restorePlan(serverId: string): RestorePlan | null {
    const server = this.server(serverId);
    const initialize = server ? json<Record<string, unknown>>(server.initialize) : null;
    if (!server || !initialize) return null;
    const rows = this.sql
      .exec<SessionRow>(`SELECT * FROM sessions WHERE server_id = ? AND state != 'closed' AND resumable = 1 ORDER BY last_activity DESC LIMIT 256`, serverId)
      .toArray();
    return {
      agent: server.agent as AgentId,
      initialize,
      authMethodId: server.auth_method,
      canResume: server.can_resume === 1,
      canLoad: server.can_load === 1,
      sessions: rows.map((r) => ({ sessionId: r.acp_session_id, cwd: r.cwd, mcpServers: json<Record<string, unknown>[]>(r.mcp_servers) ?? [] })),
      firstSeq: server.cursor + 1,
    };
  }

  /** The record of a session by its ACP id on a server, if any (to tell a resumable session from an unknown one). */
  recordOf(serverId: string, acpSessionId: string): Session | null {
    const session = this.sessionByAcp(serverId, acpSessionId);
    return session ? this.toSession(session.row) : null;
  }

  /** A recorded session of this agent with that ACP id, on any server (to tie a discovered session to its record). */
  findByAcp(agent: AgentId, acpSessionId: string): Session | null {
    const row = this.sql
      .exec<SessionRow>(`SELECT * FROM sessions WHERE agent = ? AND acp_session_id = ? ORDER BY last_activity DESC LIMIT 1`, agent, acpSessionId)
      .toArray()[0];
    return row ? this.toSession(this.live.get(row.id)?.row ?? row) : null;
  }

  /** What a session was started with (its folder and MCP servers): a continuation starts the same way. */
  startParams(id: string): { cwd: string; mcpServers: Record<string, unknown>[] } | null {
    const session = this.session(id);
    return session ? { cwd: session.row.cwd, mcpServers: json<Record<string, unknown>[]>(session.row.mcp_servers) ?? [] } : null;
  }

  get(id: string): Session | null {
    const session = this.session(id);
    return session ? this.toSession(session.row) : null;
  }

  /** A page of sessions, newest activity first, strictly before `cursor` (`<lastActivityMs>.<id>`). */
  list(filter: SessionFilter, cursor: { atMs: number; id: string } | null, limit: number): { sessions: Session[]; more: boolean } {
    this.flush();
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (cursor) {
      where.push("(last_activity < ? OR (last_activity = ? AND id < ?))");
      args.push(cursor.atMs, cursor.atMs, cursor.id);
    }
    if (filter.agent) {
      where.push("agent = ?");
      args.push(filter.agent);
    }
    if (filter.createdBy) {
      where.push("created_by = ?");
      args.push(filter.createdBy);
    }
    // `offline` is how an active session of a machine that is away reads; it is never stored.
    if (filter.state === "offline") {
      if (this.online()) return { sessions: [], more: false };
      where.push("state IN ('running', 'waiting', 'idle')");
    } else if (filter.state) {
      if (ACTIVE.has(filter.state) && !this.online()) return { sessions: [], more: false };
      where.push("state = ?");
      args.push(filter.state);
    }
    const rows = this.sql
      .exec<SessionRow>(
        `SELECT * FROM sessions ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY last_activity DESC, id DESC LIMIT ?`,
        ...args,
        limit + 1,
      )
      .toArray();
    return { sessions: rows.slice(0, limit).map((r) => this.toSession(this.live.get(r.id)?.row ?? r)), more: rows.length > limit };
  }

  transcript(id: string, after: number, limit: number): TranscriptPage | null {
    const session = this.session(id);
    if (!session) return null;
    this.flush();
    const rows = this.sql
      .exec<{ seq: number; at_ms: number; kind: string; body: string }>(
        `SELECT seq, at_ms, kind, body FROM transcript WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
        id,
        after,
        limit + 1,
      )
      .toArray();
    const entries = rows.slice(0, limit).map((r) => ({ seq: r.seq, atMs: r.at_ms, kind: r.kind, ...JSON.parse(r.body) }) as TranscriptEntry);
    return { entries, nextAfter: rows.length > limit ? entries.at(-1)!.seq : null, compactedThrough: session.row.compacted_through };
  }

  /** A bounded digest of a session's conversation, for the first prompt of its continuation. */
  digest(id: string): string | null {
    const session = this.session(id);
    if (!session) return null;
    this.flush();
    const rows = this.sql
      .exec<{ seq: number; at_ms: number; kind: string; body: string }>(
        `SELECT seq, at_ms, kind, body FROM transcript WHERE session_id = ? AND kind IN ('prompt', 'text') ORDER BY seq DESC LIMIT 400`,
        id,
      )
      .toArray()
      .reverse();
    return digestOf(
      session.row.title,
      rows.map((r) => ({ seq: r.seq, atMs: r.at_ms, kind: r.kind, ...JSON.parse(r.body) }) as TranscriptEntry),
    );
  }

  /** The session `continue` started from `from`: it remembers where it came from, and its first prompt carries `primer`. */
  continued(newId: string, from: string, primer: string): void {
    const session = this.session(newId);
    if (!session) return;
    session.row.continued_from = from;
    session.row.primer = primer;
    session.dirty = true;
    this.flush();
  }

  /** Every non-closed session of a server: what a DELETE of one needs to know before stopping the server. */
  openSessionsOf(serverId: string): number {
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM sessions WHERE server_id = ? AND state != 'closed'`, serverId).one().n;
  }

  canClose(serverId: string): boolean {
    return this.server(serverId)?.can_close === 1;
  }

  close(id: string, purge: boolean, now = Date.now()): Session | null {
    const session = this.session(id);
    if (!session) return null;
    session.row.pending = null;
    if (purge) {
      this.flush();
      this.sql.exec(`DELETE FROM transcript WHERE session_id = ?`, id);
      session.row.compacted_through = session.tail.next - 1;
      session.row.entries = 0;
      session.row.bytes = 0;
    }
    this.setState(session, "closed", now);
    this.flush();
    return this.toSession(session.row);
  }

  listen(id: string, listener: SessionListener): () => void {
    const session = this.session(id);
    const set = this.listeners.get(id) ?? new Set<SessionListener>();
    this.listeners.set(id, set);
    set.add(listener);
    if (session) session.tail.following = true;
    return () => {
      set.delete(listener);
      if (set.size > 0) return;
      this.listeners.delete(id);
      if (session) session.tail.following = false;
    };
  }

  // ---------------- storage ----------------

  /** Write what changed: entries, records and server cursors, in one batch. */
  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    for (const session of this.live.values()) {
      const entries = session.tail.takeUnsaved();
      if (entries.length === 0 && !session.dirty) continue;
      const row = session.row;
      for (const entry of entries) {
        const { seq, atMs, kind, ...rest } = entry;
        const body = JSON.stringify(rest);
        const before = this.savedBytes.get(entry);
        this.sql.exec(
          `INSERT INTO transcript (session_id, seq, at_ms, kind, body, bytes) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (session_id, seq) DO UPDATE SET body = excluded.body, bytes = excluded.bytes`,
          row.id,
          seq,
          atMs,
          kind,
          body,
          body.length,
        );
        this.savedBytes.set(entry, body.length);
        if (before !== undefined) row.bytes += body.length - before;
        else {
          row.entries++;
          row.bytes += body.length;
        }
      }
      row.next_seq = session.tail.next;
      if (row.entries > TRANSCRIPT_LIMITS.maxEntries || row.bytes > TRANSCRIPT_LIMITS.maxBytes) this.compact(row);
      this.writeRow(row);
      session.dirty = false;
    }
    for (const serverId of this.dirtyServers) {
      const s = this.servers.get(serverId);
      if (!s) continue;
      this.sql.exec(
        `INSERT INTO acp_servers (server_id, agent, initialize, auth_method, can_resume, can_load, can_close, agent_version, cursor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (server_id) DO UPDATE SET agent = excluded.agent, initialize = excluded.initialize, auth_method = excluded.auth_method,
           can_resume = excluded.can_resume, can_load = excluded.can_load, can_close = excluded.can_close,
           agent_version = excluded.agent_version, cursor = excluded.cursor`,
        s.server_id,
        s.agent,
        s.initialize,
        s.auth_method,
        s.can_resume,
        s.can_load,
        s.can_close,
        s.agent_version,
        s.cursor,
      );
    }
    this.dirtyServers.clear();
  }

  /**
   * Keep a transcript within its bounds: the oldest entries go (never the turn being written), and the
   * record says up to where. A turn never fails for it.
   */
  private compact(row: SessionRow): void {
    const keepFrom = this.sql
      .exec<{ seq: number }>(
        `SELECT seq FROM (SELECT seq, SUM(bytes) OVER (ORDER BY seq DESC) AS total, ROW_NUMBER() OVER (ORDER BY seq DESC) AS n
           FROM transcript WHERE session_id = ?) WHERE total <= ? AND n <= ? ORDER BY seq ASC LIMIT 1`,
        row.id,
        TRANSCRIPT_LIMITS.maxBytes,
        TRANSCRIPT_LIMITS.maxEntries,
      )
      .toArray()[0]?.seq;
    if (keepFrom === undefined) return;
    this.sql.exec(`DELETE FROM transcript WHERE session_id = ? AND seq < ?`, row.id, keepFrom);
    const left = this.sql
      .exec<{ n: number; bytes: number | null }>(`SELECT COUNT(*) AS n, SUM(bytes) AS bytes FROM transcript WHERE session_id = ?`, row.id)
      .one();
    row.entries = left.n;
    row.bytes = left.bytes ?? 0;
    row.compacted_through = Math.max(row.compacted_through, keepFrom - 1);
  }

  private writeRow(r: SessionRow): void {
    this.sql.exec(
      `INSERT INTO sessions (id, acp_session_id, server_id, agent, agent_version, cwd, mcp_servers, title, title_from_agent, created_by,
         created_at, last_activity, state, pending, failure, resumable, continued_from, primer, next_seq, entries, bytes, compacted_through, turn_started_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET agent_version = excluded.agent_version, cwd = excluded.cwd, title = excluded.title,
         title_from_agent = excluded.title_from_agent, last_activity = excluded.last_activity, state = excluded.state, pending = excluded.pending,
         failure = excluded.failure, resumable = excluded.resumable, continued_from = excluded.continued_from, primer = excluded.primer,
         next_seq = excluded.next_seq, entries = excluded.entries, bytes = excluded.bytes, compacted_through = excluded.compacted_through,
         turn_started_at = excluded.turn_started_at`,
      r.id,
      r.acp_session_id,
      r.server_id,
      r.agent,
      r.agent_version,
      r.cwd,
      r.mcp_servers,
      r.title,
      r.title_from_agent,
      r.created_by,
      r.created_at,
      r.last_activity,
      r.state,
      r.pending,
      r.failure,
      r.resumable,
      r.continued_from,
      r.primer,
      r.next_seq,
      r.entries,
      r.bytes,
      r.compacted_through,
      r.turn_started_at,
    );
  }

  /** Soon, or at once for what a person may be waiting to see (a state change). */
  private scheduleFlush(now = false): void {
    if (now) {
      this.flush();
      return;
    }
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  // ---------------- in memory ----------------

  private create(serverId: string, acpId: string, params: Record<string, unknown>, who: string, now: number): void {
    const server = this.server(serverId);
    if (!server) return; // a server started before this object recorded servers: its agent is unknown here
    const isFirst = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM sessions`).one().n === 0;
    const row: SessionRow = {
      id: newSessionId(this.machine()),
      acp_session_id: acpId,
      server_id: serverId,
      agent: server.agent,
      agent_version: server.agent_version,
      cwd: String(params.cwd),
      mcp_servers: JSON.stringify(Array.isArray(params.mcpServers) ? params.mcpServers : []),
      title: null,
      title_from_agent: 0,
      created_by: who,
      created_at: now,
      last_activity: now,
      state: "idle",
      pending: null,
      failure: null,
      resumable: server.can_resume === 1 || server.can_load === 1 ? 1 : 0,
      continued_from: null,
      primer: null,
      next_seq: 1,
      entries: 0,
      bytes: 0,
      compacted_through: 0,
      turn_started_at: null,
    };
    const session: LiveSession = { row, tail: new TranscriptTail(1), dirty: true, replaying: false };
    session.tail.following = this.listeners.has(row.id);
    this.live.set(row.id, session);
    this.byAcp.set(`${serverId}\n${acpId}`, row.id);
    this.flush();
    if (isFirst) this.firstSession();
  }

  private setState(session: LiveSession, state: SessionState, now: number): void {
    const changed = session.row.state !== state;
    session.row.state = state;
    session.row.last_activity = now;
    session.dirty = true;
    this.deliver();
    if (changed) {
      this.notifyRecord(session);
      this.scheduleFlush(true);
    } else this.scheduleFlush();
  }

  private session(id: string): LiveSession | null {
    const known = this.live.get(id);
    if (known) return known;
    if (machineOfSession(id) !== this.machine()) return null;
    const row = this.sql.exec<SessionRow>(`SELECT * FROM sessions WHERE id = ?`, id).toArray()[0];
    if (!row) return null;
    const session: LiveSession = { row, tail: new TranscriptTail(row.next_seq), dirty: false, replaying: false };
    session.tail.following = this.listeners.has(id);
    this.live.set(id, session);
    return session;
  }

  private sessionByAcp(serverId: string, acpId: string): LiveSession | null {
    const key = `${serverId}\n${acpId}`;
    let id = this.byAcp.get(key);
    if (id === undefined) {
      id = this.sql.exec<{ id: string }>(`SELECT id FROM sessions WHERE server_id = ? AND acp_session_id = ?`, serverId, acpId).toArray()[0]?.id ?? null;
      if (this.byAcp.size > 10_000) this.byAcp.clear();
      this.byAcp.set(key, id);
    }
    return id ? this.session(id) : null;
  }

  private liveOfServer(serverId: string): LiveSession[] {
    const rows = this.sql.exec<{ id: string }>(`SELECT id FROM sessions WHERE server_id = ? AND state IN ('running', 'waiting')`, serverId).toArray();
    const ids = new Set(rows.map((r) => r.id));
    for (const s of this.live.values()) if (s.row.server_id === serverId && (s.row.state === "running" || s.row.state === "waiting")) ids.add(s.row.id);
    return [...ids].flatMap((id) => this.session(id) ?? []);
  }

  private server(serverId: string): ServerRow | null {
    const known = this.servers.get(serverId);
    if (known) return known;
    const row = this.sql.exec<ServerRow>(`SELECT * FROM acp_servers WHERE server_id = ?`, serverId).toArray()[0];
    if (!row) return null;
    this.servers.set(serverId, row);
    return row;
  }

  /** Hand live readers what changed. */
  private deliver(): void {
    for (const [id, listeners] of this.listeners) {
      const session = this.live.get(id);
      if (!session) continue;
      const entries = session.tail.takeUnsent();
      if (entries.length) for (const l of listeners) l.entries(entries);
    }
  }

  private notifyRecord(session: LiveSession): void {
    const listeners = this.listeners.get(session.row.id);
    if (!listeners) return;
    const record = this.toSession(session.row);
    for (const l of listeners) l.record(record);
  }

  private toSession(r: SessionRow): Session {
    const state = ACTIVE.has(r.state) && !this.online() ? "offline" : (r.state as SessionState);
    return {
      id: r.id,
      sessionId: r.acp_session_id,
      machine: machineOfSession(r.id),
      agent: r.agent as AgentId,
      agentVersion: r.agent_version,
      serverId: r.server_id,
      cwd: r.cwd,
      title: r.title,
      createdBy: r.created_by,
      createdAtMs: r.created_at,
      lastActivityMs: r.last_activity,
      state,
      pending: json<PendingRequest>(r.pending),
      failure: json<{ message: string; stderr?: string }>(r.failure),
      resumable: r.resumable === 1,
      continuedFrom: r.continued_from,
      entries: r.entries,
    };
  }
}
