/**
 * What the machine's object reads of its sessions (docs/architecture.md, "Sessions"): records, pages of
 * records, pages of a transcript, and how to start a server's agent again. A read of the store writes what
 * is in memory first, so it sees what the live sessions hold. The recorder writes; this only reads.
 */
import { machineOfSession, type Session, type SessionFilter, type TranscriptPage } from "@agent-runtime/protocol/sessions";
import { SessionUsage, type UsageRow } from "@agent-runtime/protocol/usage";
import type { AgentId } from "@agent-runtime/protocol/values";
import { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import { z } from "zod";
import { parsedOr } from "../storage/stored";
import { isActive, type LiveSessions, McpServers } from "./live-sessions";
import type { SessionStore } from "./session-store";
import { digestOf } from "./transcript";

export interface RestorePlan {
  agent: AgentId;
  initialize: Record<string, unknown>;
  authMethodId: string | null;
  canResume: boolean;
  canLoad: boolean;
  sessions: { sessionId: string; cwd: string; mcpServers: Record<string, unknown>[] }[];
  firstSeq: number;
  /** The sandbox it was started in (null: a server recorded before sandboxes). */
  sandbox: SessionSandbox | null;
}

export class SessionReads {
  constructor(private readonly sessions: LiveSessions) {}

  private get store(): SessionStore {
    return this.sessions.store;
  }

  get(id: string): Session | null {
    const session = this.sessions.session(id);
    return session ? this.sessions.toSession(session.row) : null;
  }

  /** The record of a session by its ACP id on a server, if any (to tell a resumable session from an unknown one). */
  recordOf(serverId: string, acpSessionId: string): Session | null {
    const session = this.sessions.byAcpId(serverId, acpSessionId);
    return session ? this.sessions.toSession(session.row) : null;
  }

  /** A recorded session of this agent with that ACP id, on any server (to tie a discovered session to its record). */
  findByAcp(agent: AgentId, acpSessionId: string): Session | null {
    const row = this.store.findByAcp(agent, acpSessionId);
    return row ? this.sessions.toSession(this.sessions.current(row)) : null;
  }

  /** What a session was started with (its folder and MCP servers): a continuation starts the same way. */
  startParams(id: string): { cwd: string; mcpServers: Record<string, unknown>[] } | null {
    const session = this.sessions.session(id);
    return session ? { cwd: session.row.cwd, mcpServers: parsedOr(McpServers, session.row.mcp_servers) ?? [] } : null;
  }

  /** Every non-closed session of a server: what a DELETE of one needs to know before stopping the server. */
  openSessionsOf(serverId: string): number {
    return this.store.openCountOf(serverId);
  }

  canClose(serverId: string): boolean {
    return this.sessions.server(serverId)?.can_close === 1;
  }

  canDelete(serverId: string): boolean {
    return this.sessions.server(serverId)?.can_delete === 1;
  }

  /** The sessions waiting for their agent's login (one agent's, or all). */
  needingLogin(agent: AgentId | null): Session[] {
    this.sessions.flush();
    return this.store.needingLogin(agent).map((r) => this.sessions.toSession(this.sessions.current(r)));
  }

  /** Each session's usage by day within [fromDay, toDay] (UTC days, inclusive): what GET /v1/usage sums. */
  usage(fromDay: string, toDay: string, createdBy: string | null): UsageRow[] {
    this.sessions.flush();
    const since = Date.parse(`${fromDay}T00:00:00Z`);
    return this.store.withUsage(since, createdBy).flatMap((r) => {
      const usage = parsedOr(SessionUsage, this.sessions.current(r).usage);
      if (!usage) return [];
      return Object.entries(usage.days)
        .filter(([day]) => day >= fromDay && day <= toDay)
        .map(([day, totals]) => ({ session: r.id, machine: machineOfSession(r.id), agent: r.agent, token: r.created_by, day, totals }));
    });
  }

  /** How to start a server's agent again as its client set it up, or null when it never got that far. */
  restorePlan(serverId: string): RestorePlan | null {
    const server = this.sessions.server(serverId);
    const initialize = server ? parsedOr(z.record(z.string(), z.unknown()), server.initialize) : null;
    if (!server || !initialize) return null;
    return {
      agent: server.agent,
      initialize,
      authMethodId: server.auth_method,
      canResume: server.can_resume === 1,
      canLoad: server.can_load === 1,
      sessions: this.store
        .resumableOf(serverId)
        .map((r) => ({ sessionId: r.acp_session_id, cwd: r.cwd, mcpServers: parsedOr(McpServers, r.mcp_servers) ?? [] })),
      firstSeq: server.cursor + 1,
      sandbox: this.sandboxOf(serverId),
    };
  }

  /** The sandbox a server's agent was started in, read back through its schema (null: none recorded). */
  sandboxOf(serverId: string): SessionSandbox | null {
    return parsedOr(SessionSandbox, this.sessions.server(serverId)?.sandbox ?? null);
  }

  /** A page of sessions, newest activity first, strictly before `cursor` (`<lastActivityMs>.<id>`). */
  list(filter: SessionFilter, cursor: { atMs: number; id: string } | null, limit: number): { sessions: Session[]; more: boolean } {
    this.sessions.flush();
    // `offline` is how an active session of a machine that is away reads; it is never stored.
    const online = this.sessions.isOnline();
    if ((filter.state === "offline" && online) || (filter.state && isActive(filter.state) && !online)) return { sessions: [], more: false };
    const state = filter.state === "offline" ? "active" : filter.state;
    const rows = this.store.page({ agent: filter.agent, createdBy: filter.createdBy, state }, cursor, limit);
    return { sessions: rows.slice(0, limit).map((r) => this.sessions.toSession(this.sessions.current(r))), more: rows.length > limit };
  }

  /** Entries of a session's transcript after `after`, `limit` at most. */
  transcript(id: string, after: number, limit: number): TranscriptPage | null {
    const session = this.sessions.session(id);
    if (!session) return null;
    this.sessions.flush();
    const entries = this.store.entries(id, after, limit);
    const page = entries.slice(0, limit);
    return { entries: page, nextAfter: entries.length > limit ? page.at(-1)!.seq : null, compactedThrough: session.row.compacted_through };
  }

  /** A bounded digest of a session's conversation, for the first prompt of its continuation. */
  digest(id: string): string | null {
    const session = this.sessions.session(id);
    if (!session) return null;
    this.sessions.flush();
    return digestOf(session.row.title, this.store.conversationTail(id));
  }
}
