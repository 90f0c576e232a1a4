/**
 * The sessions of one machine while its object is in memory (docs/architecture.md, "Sessions"): each
 * record and its transcript's tail, the ACP servers they run on, who follows them live, and the batched
 * writes to the store. The recorder says what happened; this keeps it, tells the followers, and writes
 * what changed at most once per FLUSH_MS (at once when a state changes: a person may be waiting to see it).
 */
import { LoginMethod } from "@agent-runtime/protocol/logins";
import { SessionUsage } from "@agent-runtime/protocol/usage";
import { machineOfSession, PendingRequest, type QueuedPrompt, Session, type SessionState, type TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { SessionWorktree, TurnChanges } from "@agent-runtime/protocol/review";
import { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import { z } from "zod";
import { TranscriptTail } from "./transcript";
import type { ServerRow, SessionRow, SessionStore } from "./session-store";
import { randomHex16 } from "../../lib/ids";
import { parsedOr } from "../storage/stored";

/** How long changed entries may wait in memory before they are written (a stream in full flow: about one write batch a second). */
export const FLUSH_MS = 1_000;

/** One session while this object is in memory: its row (written when dirty) and its transcript's tail. */
export interface LiveSession {
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

/** Something reading every session's record of this machine live (the dashboard's waiting count). */
export interface SessionsWatcher {
  record(session: Session): void;
  /** The machine came or went: every session reads differently. */
  machineChanged(): void;
  /** What listens on the machine changed (its sidecar said so). */
  portsChanged(): void;
}

const ACTIVE: ReadonlySet<string> = new Set(["running", "waiting", "idle"]);

export function isActive(state: string): boolean {
  return ACTIVE.has(state);
}

/** The MCP servers a session was started with, as its client sent them. */
export const McpServers = z.array(z.record(z.string(), z.unknown()));

function newSessionId(machine: string): string {
  return `ses-${randomHex16()}-${machine}`;
}

export class LiveSessions {
  private readonly live = new Map<string, LiveSession>();
  /** `${serverId}\n${acpSessionId}` → runtime id. */
  private readonly byAcp = new Map<string, string | null>();
  private readonly servers = new Map<string, ServerRow>();
  private readonly dirtyServers = new Set<string>();
  private readonly listeners = new Map<string, Set<SessionListener>>();
  private readonly watchers = new Set<SessionsWatcher>();
  private flushTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    readonly store: SessionStore,
    private readonly machine: () => string,
    /** Whether the machine's sidecar is connected now: a session of a machine that is away reads as `offline`. */
    private readonly online: () => boolean,
    /** Called once, when this machine records its first session (the team lists only such machines). */
    private readonly firstSession: () => void,
    /** A session's queued prompts (prompt-queue-store.ts), as its record shows them. */
    private readonly queuedOf: (id: string) => QueuedPrompt[] = () => [],
  ) {}

  // ---------------- finding ----------------

  session(id: string): LiveSession | null {
    const known = this.live.get(id);
    if (known) return known;
    if (machineOfSession(id) !== this.machine()) return null;
    const row = this.store.row(id);
    if (!row) return null;
    const session: LiveSession = { row, tail: new TranscriptTail(row.next_seq), dirty: false, replaying: false };
    session.tail.following = this.listeners.has(id);
    this.live.set(id, session);
    return session;
  }

  byAcpId(serverId: string, acpId: string): LiveSession | null {
    const key = `${serverId}\n${acpId}`;
    let id = this.byAcp.get(key);
    if (id === undefined) {
      id = this.store.idByAcp(serverId, acpId);
      if (this.byAcp.size > 10_000) this.byAcp.clear();
      this.byAcp.set(key, id);
    }
    return id ? this.session(id) : null;
  }

  /** A server's sessions in a turn (running or waiting) now: what is stored, as this object holds it in memory. */
  turningOf(serverId: string): LiveSession[] {
    const ids = new Set(this.store.turningIdsOf(serverId));
    for (const s of this.live.values()) if (s.row.server_id === serverId) ids.add(s.row.id);
    return [...ids].flatMap((id) => {
      const session = this.session(id);
      return session && (session.row.state === "running" || session.row.state === "waiting") ? [session] : [];
    });
  }

  /** The in-memory row of a stored one, if this object holds it (it may be newer than what is written). */
  current(row: SessionRow): SessionRow {
    return this.live.get(row.id)?.row ?? row;
  }

  server(serverId: string): ServerRow | null {
    const known = this.servers.get(serverId);
    if (known) return known;
    const row = this.store.server(serverId);
    if (row) this.servers.set(serverId, row);
    return row;
  }

  // ---------------- changing ----------------

  /** A server's row is new or changed: written with the next flush. */
  serverChanged(server: ServerRow): void {
    this.servers.set(server.server_id, server);
    this.dirtyServers.add(server.server_id);
    this.scheduleFlush();
  }

  /** A new session on `server`, written at once. */
  create(
    server: ServerRow,
    acpId: string,
    cwd: string,
    mcpServers: unknown[],
    who: string,
    now: number,
    worktree: SessionWorktree | null,
    /** A session its agent refused for want of a login: how it can be logged in. */
    needsLogin: LoginMethod[] | null = null,
  ): LiveSession {
    const isFirst = this.store.count() === 0;
    const row: SessionRow = {
      id: newSessionId(this.machine()),
      acp_session_id: acpId,
      server_id: server.server_id,
      agent: server.agent,
      agent_version: server.agent_version,
      cwd,
      mcp_servers: JSON.stringify(mcpServers),
      title: null,
      title_from_agent: 0,
      created_by: who,
      created_at: now,
      last_activity: now,
      state: needsLogin ? "needs_login" : "idle",
      pending: null,
      failure: null,
      resumable: server.can_resume === 1 || server.can_load === 1 ? 1 : 0,
      continued_from: null,
      primer: null,
      next_seq: 1,
      entries: 0,
      bytes: 0,
      compacted_through: 0,
      worktree: worktree ? JSON.stringify(worktree) : null,
      last_changes: null,
      turn_started_at: null,
      // The sandbox of the server it runs on, as that server was started (sandbox/server-sandbox.ts).
      sandbox: server.sandbox,
      login: needsLogin ? JSON.stringify(needsLogin) : null,
      usage: null,
    };
    const session: LiveSession = { row, tail: new TranscriptTail(1), dirty: true, replaying: false };
    session.tail.following = this.listeners.has(row.id);
    this.live.set(row.id, session);
    this.byAcp.set(`${server.server_id}\n${acpId}`, row.id);
    this.flush();
    if (isFirst) this.firstSession();
    return session;
  }

  /** A record takes the agent's id of a session started for it (after a login): found by that id from now on. */
  adopt(session: LiveSession, serverId: string, acpId: string): void {
    this.byAcp.delete(`${session.row.server_id}\n${session.row.acp_session_id}`);
    session.row.server_id = serverId;
    session.row.acp_session_id = acpId;
    this.byAcp.set(`${serverId}\n${acpId}`, session.row.id);
    session.dirty = true;
  }

  setState(session: LiveSession, state: SessionState, now: number): void {
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

  // ---------------- followers ----------------

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

  watch(watcher: SessionsWatcher): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Hand live readers what changed. */
  deliver(): void {
    for (const [id, listeners] of this.listeners) {
      const session = this.live.get(id);
      if (!session) continue;
      const entries = session.tail.takeUnsent();
      if (entries.length) for (const l of listeners) l.entries(entries);
    }
  }

  /** What listens on the machine changed: its watchers are told (there is no record to write). */
  notifyPorts(): void {
    for (const w of this.watchers) w.portsChanged();
  }

  /** Every followed session's record again (the machine came or went: they read differently). */
  notifyFollowed(): void {
    for (const w of this.watchers) w.machineChanged();
    for (const id of this.listeners.keys()) {
      const session = this.session(id);
      if (session) this.notifyRecord(session);
    }
  }

  /** Close a session (`purge`: its transcript dropped too), written at once. */
  close(id: string, purge: boolean, now: number): Session | null {
    const session = this.session(id);
    if (!session) return null;
    session.row.pending = null;
    if (purge) {
      this.flush();
      this.store.purgeTranscript(id);
      session.row.compacted_through = session.tail.next - 1;
      session.row.entries = 0;
      session.row.bytes = 0;
    }
    this.setState(session, "closed", now);
    this.flush();
    return this.toSession(session.row);
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

  notifyRecord(session: LiveSession): void {
    const listeners = this.listeners.get(session.row.id);
    if (!listeners && this.watchers.size === 0) return;
    const record = this.toSession(session.row);
    for (const l of listeners ?? []) l.record(record);
    for (const w of this.watchers) w.record(record);
  }

  // ---------------- writing ----------------

  /** Write what changed: entries, records and server cursors, in one batch. */
  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    for (const session of this.live.values()) {
      const entries = session.tail.takeUnsaved();
      if (entries.length === 0 && !session.dirty) continue;
      this.store.writeEntries(session.row, entries);
      session.row.next_seq = session.tail.next;
      this.store.writeRow(session.row);
      session.dirty = false;
    }
    for (const serverId of this.dirtyServers) {
      const server = this.servers.get(serverId);
      if (server) this.store.writeServer(server);
    }
    this.dirtyServers.clear();
  }

  /** Soon, or at once for what a person may be waiting to see (a state change). */
  scheduleFlush(now = false): void {
    if (now) {
      this.flush();
      return;
    }
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  // ---------------- reading ----------------

  toSession(r: SessionRow): Session {
    const state = isActive(r.state) && !this.online() ? "offline" : r.state;
    return {
      id: r.id,
      sessionId: r.acp_session_id,
      machine: machineOfSession(r.id),
      agent: r.agent,
      agentVersion: r.agent_version,
      serverId: r.server_id,
      cwd: r.cwd,
      title: r.title,
      createdBy: r.created_by,
      createdAtMs: r.created_at,
      lastActivityMs: r.last_activity,
      state,
      pending: parsedOr(PendingRequest, r.pending),
      failure: parsedOr(Session.shape.failure.unwrap(), r.failure),
      resumable: r.resumable === 1,
      continuedFrom: r.continued_from,
      entries: r.entries,
      worktree: parsedOr(SessionWorktree, r.worktree),
      lastChanges: parsedOr(TurnChanges, r.last_changes),
      sandbox: parsedOr(SessionSandbox, r.sandbox),
      queued: this.queuedOf(r.id),
      ...this.waitingOf(r),
    };
  }

  /** What a person is waited for, how its agent logs in, what its turns used. */
  private waitingOf(r: SessionRow): Pick<Session, "waiting" | "login" | "usage"> {
    const pending = r.state === "waiting" ? parsedOr(PendingRequest, r.pending) : null;
    const login = r.state === "needs_login" ? parsedOr(z.array(LoginMethod), r.login) : null;
    return {
      waiting: pending ? { kind: pending.kind } : r.state === "needs_login" ? { kind: "login" } : null,
      login: r.state === "needs_login" ? { methods: login ?? [] } : null,
      usage: parsedOr(SessionUsage, r.usage),
    };
  }

  isOnline(): boolean {
    return this.online();
  }
}
