/**
 * Where a machine's sessions are kept (docs/architecture.md, "Sessions"): the SQL of its records, their
 * transcripts and the ACP servers they ran on, in the machine's Durable Object. The recorder decides what
 * to write and when; this store is the only code that knows the tables, and their schema has a version
 * with ordered migrations (storage/migrations.ts), so a change to a column has a path for objects already
 * deployed.
 */
import { SessionState, TRANSCRIPT_LIMITS, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { z } from "zod";
import { type Migration, migrate } from "../storage/migrations";
import { Count, firstRow, jsonText, oneRow, rows } from "../storage/stored";

/** A session's record as its table keeps it; JSON columns stay text here and are read through their schemas where used. */
export const SessionRow = z.object({
  id: z.string(),
  acp_session_id: z.string(),
  server_id: z.string(),
  agent: z.string(),
  agent_version: z.string().nullable(),
  cwd: z.string(),
  mcp_servers: z.string(),
  title: z.string().nullable(),
  title_from_agent: z.number(),
  created_by: z.string(),
  created_at: z.number(),
  last_activity: z.number(),
  state: SessionState,
  pending: z.string().nullable(),
  failure: z.string().nullable(),
  resumable: z.number(),
  continued_from: z.string().nullable(),
  primer: z.string().nullable(),
  next_seq: z.number(),
  entries: z.number(),
  bytes: z.number(),
  compacted_through: z.number(),
  turn_started_at: z.number().nullable(),
  /** The worktree the session runs in (JSON of SessionWorktree), when it asked for one. */
  worktree: z.string().nullable(),
  /** The last turn's change summary (JSON of TurnChanges), as the machine reported it. */
  last_changes: z.string().nullable(),
  /** The sandbox its agent server runs in (JSON of SessionSandbox), null for a session recorded before sandboxes. */
  sandbox: z.string().nullable(),
});
export type SessionRow = z.output<typeof SessionRow>;

export const ServerRow = z.object({
  server_id: z.string(),
  agent: z.string(),
  initialize: z.string().nullable(),
  auth_method: z.string().nullable(),
  can_resume: z.number(),
  can_load: z.number(),
  can_close: z.number(),
  agent_version: z.string().nullable(),
  cursor: z.number(),
  /** The sandbox its agent was started in (JSON of SessionSandbox): a restart asks for the same one. */
  sandbox: z.string().nullable(),
});
export type ServerRow = z.output<typeof ServerRow>;

/** The sessions schema, in order. Append a migration to change it; never edit one that has shipped. */
export const SESSION_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "sessions, their transcripts and the ACP servers they ran on (the tables as they stood before versions were kept)",
    up(sql) {
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
    },
  },
  {
    version: 2,
    does: "review and ship: the worktree a session runs in, and its last turn's change summary",
    up(sql) {
      sql.exec(`ALTER TABLE sessions ADD COLUMN worktree TEXT`);
      sql.exec(`ALTER TABLE sessions ADD COLUMN last_changes TEXT`);
    },
  },
  {
    version: 3,
    does: "sandboxes: the sandbox each server was started in, and each session runs in",
    up(sql) {
      sql.exec(`ALTER TABLE sessions ADD COLUMN sandbox TEXT`);
      sql.exec(`ALTER TABLE acp_servers ADD COLUMN sandbox TEXT`);
    },
  },
];

/** Which sessions a page lists: by agent, by who started them, by stored state (or any active one). */
export interface RowFilter {
  agent?: string;
  createdBy?: string;
  state?: string | "active";
}

/** A transcript row: its body holds the entry's fields other than its place, kind and time. */
const EntryRow = z.object({ seq: z.number(), at_ms: z.number(), kind: z.string(), body: jsonText(z.record(z.string(), z.unknown())) }).transform((r, ctx) => {
  const entry = TranscriptEntry.safeParse({ ...r.body, seq: r.seq, atMs: r.at_ms, kind: r.kind });
  if (entry.success) return entry.data;
  ctx.addIssue({ code: "custom", message: z.prettifyError(entry.error) });
  return z.NEVER;
});

const IdRow = z.object({ id: z.string() });

export class SessionStore {
  private readonly sql: SqlStorage;
  /** The size each entry had when last written, so a grown entry's bytes are counted without reading it back. */
  private readonly savedBytes = new WeakMap<TranscriptEntry, number>();

  constructor(storage: DurableObjectStorage) {
    migrate(storage, "sessions", SESSION_MIGRATIONS);
    this.sql = storage.sql;
  }

  // ---------------- records ----------------

  row(id: string): SessionRow | null {
    return firstRow(this.sql, SessionRow, `SELECT * FROM sessions WHERE id = ?`, id);
  }

  idByAcp(serverId: string, acpId: string): string | null {
    return firstRow(this.sql, IdRow, `SELECT id FROM sessions WHERE server_id = ? AND acp_session_id = ?`, serverId, acpId)?.id ?? null;
  }

  /** The ids of a server's sessions in a turn (running or waiting) as stored. */
  turningIdsOf(serverId: string): string[] {
    return rows(this.sql, IdRow, `SELECT id FROM sessions WHERE server_id = ? AND state IN ('running', 'waiting')`, serverId).map((r) => r.id);
  }

  /** A server's sessions a restart reattaches: not closed, resumable, the most recently active first. */
  resumableOf(serverId: string, limit = 256): SessionRow[] {
    return rows(
      this.sql,
      SessionRow,
      `SELECT * FROM sessions WHERE server_id = ? AND state != 'closed' AND resumable = 1 ORDER BY last_activity DESC LIMIT ?`,
      serverId,
      limit,
    );
  }

  /** The newest session of this agent with that ACP id, on any server. */
  findByAcp(agent: string, acpId: string): SessionRow | null {
    return firstRow(this.sql, SessionRow, `SELECT * FROM sessions WHERE agent = ? AND acp_session_id = ? ORDER BY last_activity DESC LIMIT 1`, agent, acpId);
  }

  count(): number {
    return oneRow(this.sql, Count, `SELECT COUNT(*) AS n FROM sessions`).n;
  }

  openCountOf(serverId: string): number {
    return oneRow(this.sql, Count, `SELECT COUNT(*) AS n FROM sessions WHERE server_id = ? AND state != 'closed'`, serverId).n;
  }

  /** A page of records, newest activity first, strictly before `cursor`; one more than `limit` says there are more. */
  page(filter: RowFilter, cursor: { atMs: number; id: string } | null, limit: number): SessionRow[] {
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
    if (filter.state === "active") where.push("state IN ('running', 'waiting', 'idle')");
    else if (filter.state) {
      where.push("state = ?");
      args.push(filter.state);
    }
    return rows(
      this.sql,
      SessionRow,
      `SELECT * FROM sessions ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY last_activity DESC, id DESC LIMIT ?`,
      ...args,
      limit + 1,
    );
  }

  writeRow(r: SessionRow): void {
    this.sql.exec(
      `INSERT INTO sessions (id, acp_session_id, server_id, agent, agent_version, cwd, mcp_servers, title, title_from_agent, created_by,
         created_at, last_activity, state, pending, failure, resumable, continued_from, primer, next_seq, entries, bytes, compacted_through, turn_started_at,
         worktree, last_changes, sandbox)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET agent_version = excluded.agent_version, cwd = excluded.cwd, title = excluded.title,
         title_from_agent = excluded.title_from_agent, last_activity = excluded.last_activity, state = excluded.state, pending = excluded.pending,
         failure = excluded.failure, resumable = excluded.resumable, continued_from = excluded.continued_from, primer = excluded.primer,
         next_seq = excluded.next_seq, entries = excluded.entries, bytes = excluded.bytes, compacted_through = excluded.compacted_through,
         turn_started_at = excluded.turn_started_at, worktree = excluded.worktree, last_changes = excluded.last_changes, sandbox = excluded.sandbox`,
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
      r.worktree,
      r.last_changes,
      r.sandbox,
    );
  }

  // ---------------- transcripts ----------------

  /** Write entries (new ones, or ones that grew) of `row`'s transcript, keeping its counts and its bounds. */
  writeEntries(row: SessionRow, entries: TranscriptEntry[]): void {
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
    if (row.entries > TRANSCRIPT_LIMITS.maxEntries || row.bytes > TRANSCRIPT_LIMITS.maxBytes) this.compact(row);
  }

  /** Entries after `after`, in order, `limit` at most (one more says there are more). */
  entries(id: string, after: number, limit: number): TranscriptEntry[] {
    return rows(
      this.sql,
      EntryRow,
      `SELECT seq, at_ms, kind, body FROM transcript WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
      id,
      after,
      limit + 1,
    );
  }

  /** The last prompts and texts of a conversation, in order (what a digest is made of). */
  conversationTail(id: string, limit = 400): TranscriptEntry[] {
    return rows(
      this.sql,
      EntryRow,
      `SELECT seq, at_ms, kind, body FROM transcript WHERE session_id = ? AND kind IN ('prompt', 'text') ORDER BY seq DESC LIMIT ?`,
      id,
      limit,
    ).reverse();
  }

  purgeTranscript(id: string): void {
    this.sql.exec(`DELETE FROM transcript WHERE session_id = ?`, id);
  }

  /**
   * Keep a transcript within its bounds: the oldest entries go (never the turn being written), and the
   * record says up to where. A turn never fails for it.
   */
  private compact(row: SessionRow): void {
    const keepFrom = firstRow(
      this.sql,
      z.object({ seq: z.number() }),
      `SELECT seq FROM (SELECT seq, SUM(bytes) OVER (ORDER BY seq DESC) AS total, ROW_NUMBER() OVER (ORDER BY seq DESC) AS n
         FROM transcript WHERE session_id = ?) WHERE total <= ? AND n <= ? ORDER BY seq ASC LIMIT 1`,
      row.id,
      TRANSCRIPT_LIMITS.maxBytes,
      TRANSCRIPT_LIMITS.maxEntries,
    )?.seq;
    if (keepFrom === undefined) return;
    this.sql.exec(`DELETE FROM transcript WHERE session_id = ? AND seq < ?`, row.id, keepFrom);
    const left = oneRow(
      this.sql,
      Count.extend({ bytes: z.number().nullable() }),
      `SELECT COUNT(*) AS n, SUM(bytes) AS bytes FROM transcript WHERE session_id = ?`,
      row.id,
    );
    row.entries = left.n;
    row.bytes = left.bytes ?? 0;
    row.compacted_through = Math.max(row.compacted_through, keepFrom - 1);
  }

  // ---------------- ACP servers ----------------

  server(serverId: string): ServerRow | null {
    return firstRow(this.sql, ServerRow, `SELECT * FROM acp_servers WHERE server_id = ?`, serverId);
  }

  writeServer(s: ServerRow): void {
    this.sql.exec(
      `INSERT INTO acp_servers (server_id, agent, initialize, auth_method, can_resume, can_load, can_close, agent_version, cursor, sandbox)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (server_id) DO UPDATE SET agent = excluded.agent, initialize = excluded.initialize, auth_method = excluded.auth_method,
         can_resume = excluded.can_resume, can_load = excluded.can_load, can_close = excluded.can_close,
         agent_version = excluded.agent_version, cursor = excluded.cursor, sandbox = excluded.sandbox`,
      s.server_id,
      s.agent,
      s.initialize,
      s.auth_method,
      s.can_resume,
      s.can_load,
      s.can_close,
      s.agent_version,
      s.cursor,
      s.sandbox,
    );
  }
}
