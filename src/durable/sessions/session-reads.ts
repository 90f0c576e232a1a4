/**
 * What the machine's object reads of its sessions (docs/architecture.md, "Sessions"): pages of records,
 * pages of a transcript, and how to start a server's agent again. Each writes what is in memory first, so
 * a read sees what the live sessions hold.
 */
import type { Session, SessionFilter, TranscriptPage } from "@agent-runtime/protocol/sessions";
import type { AgentId } from "@agent-runtime/protocol/values";
import { isActive, type LiveSessions, parseJson } from "./live-sessions";
import { digestOf } from "./transcript";

export interface RestorePlan {
  agent: AgentId;
  initialize: Record<string, unknown>;
  authMethodId: string | null;
  canResume: boolean;
  canLoad: boolean;
  sessions: { sessionId: string; cwd: string; mcpServers: Record<string, unknown>[] }[];
  firstSeq: number;
}

/** How to start a server's agent again as its client set it up, or null when it never got that far. */
export function restorePlanOf(sessions: LiveSessions, serverId: string): RestorePlan | null {
  const server = sessions.server(serverId);
  const initialize = server ? parseJson<Record<string, unknown>>(server.initialize) : null;
  if (!server || !initialize) return null;
  return {
    agent: server.agent as AgentId,
    initialize,
    authMethodId: server.auth_method,
    canResume: server.can_resume === 1,
    canLoad: server.can_load === 1,
    sessions: sessions.store
      .resumableOf(serverId)
      .map((r) => ({ sessionId: r.acp_session_id, cwd: r.cwd, mcpServers: parseJson<Record<string, unknown>[]>(r.mcp_servers) ?? [] })),
    firstSeq: server.cursor + 1,
  };
}

/** A page of sessions, newest activity first, strictly before `cursor`. */
export function sessionPage(
  sessions: LiveSessions,
  filter: SessionFilter,
  cursor: { atMs: number; id: string } | null,
  limit: number,
): { sessions: Session[]; more: boolean } {
  sessions.flush();
  // `offline` is how an active session of a machine that is away reads; it is never stored.
  const online = sessions.isOnline();
  if ((filter.state === "offline" && online) || (filter.state && isActive(filter.state) && !online)) return { sessions: [], more: false };
  const state = filter.state === "offline" ? "active" : filter.state;
  const rows = sessions.store.page({ agent: filter.agent, createdBy: filter.createdBy, state }, cursor, limit);
  return { sessions: rows.slice(0, limit).map((r) => sessions.toSession(sessions.current(r))), more: rows.length > limit };
}

/** Entries of a session's transcript after `after`, `limit` at most. */
export function transcriptPage(sessions: LiveSessions, id: string, after: number, limit: number): TranscriptPage | null {
  const session = sessions.session(id);
  if (!session) return null;
  sessions.flush();
  const entries = sessions.store.entries(id, after, limit);
  const page = entries.slice(0, limit);
  return { entries: page, nextAfter: entries.length > limit ? page.at(-1)!.seq : null, compactedThrough: session.row.compacted_through };
}

/** A bounded digest of a session's conversation, for the first prompt of its continuation. */
export function digestOfSession(sessions: LiveSessions, id: string): string | null {
  const session = sessions.session(id);
  if (!session) return null;
  sessions.flush();
  return digestOf(session.row.title, sessions.store.conversationTail(id));
}
