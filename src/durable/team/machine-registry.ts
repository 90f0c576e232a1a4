/**
 * The team's registry of machines (docs/architecture.md, "Idle cost"): written when a sidecar connects
 * or disconnects, never per request or per heartbeat; and the machines that recorded sessions (written
 * once per machine), which lists of sessions and deliveries ask.
 */
import type { Machine } from "@agent-runtime/protocol/machines";
import { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";
import { z } from "zod";
import { parsedOr, rows } from "../storage/stored";

/** A machine's row as its table keeps it. */
const MachineColumns = z.object({
  id: z.string(),
  connected: z.number(),
  connected_at_ms: z.number().nullable(),
  last_seen_ms: z.number().nullable(),
  sidecar_version: z.string().nullable(),
  platform: z.string().nullable(),
  /** The hello's sandbox (JSON of MachineSandbox); null before sandboxes, or when it does not read. */
  sandbox: z.string().nullable(),
});

/** A machine's row, read as the API answers it. */
const MachineRow = MachineColumns.transform(machineOf);

const IdRow = z.object({ id: z.string() });

/** The stored hello's sandbox, parsed; one this release cannot read is shown as unknown (null), not as a failure of the list. */
function machineOf(r: z.output<typeof MachineColumns>): Machine {
  return {
    id: r.id,
    connected: r.connected === 1,
    connectedAtMs: r.connected_at_ms,
    lastSeenMs: r.last_seen_ms,
    sidecarVersion: r.sidecar_version,
    sidecarOutdated: r.sidecar_version !== null && sidecarVersionAdvice(r.sidecar_version).outdated,
    platform: r.platform,
    sandbox: parsedOr(MachineSandbox, r.sandbox),
  };
}

export class MachineRegistry {
  constructor(private readonly sql: SqlStorage) {}

  connected(m: { id: string; connectedAtMs: number; sidecarVersion: string; platform: string; sandbox?: MachineSandbox | null }): void {
    this.sql.exec(
      `INSERT INTO machines (id, connected, connected_at_ms, last_seen_ms, sidecar_version, platform, sandbox) VALUES (?, 1, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET connected = 1, connected_at_ms = excluded.connected_at_ms, last_seen_ms = excluded.last_seen_ms,
         sidecar_version = excluded.sidecar_version, platform = excluded.platform, sandbox = excluded.sandbox`,
      m.id,
      m.connectedAtMs,
      Date.now(),
      m.sidecarVersion,
      m.platform,
      m.sandbox ? JSON.stringify(m.sandbox) : null,
    );
  }

  disconnected(id: string, atMs: number): void {
    this.sql.exec(`UPDATE machines SET connected = 0, last_seen_ms = ? WHERE id = ?`, atMs, id);
  }

  /** Has this machine's sidecar ever connected? (A client's request for any other id creates nothing.) */
  exists(id: string): boolean {
    return this.sql.exec(`SELECT 1 FROM machines WHERE id = ?`, id).toArray().length > 0;
  }

  /** A machine recorded its first session (once in its life): lists of sessions ask it from now on. */
  hasSessions(id: string): void {
    this.sql.exec(`INSERT OR IGNORE INTO session_machines (id) VALUES (?)`, id);
  }

  /** The machines with sessions, of a scope (`*` or ids), by id. */
  withSessions(scope: "*" | string[]): string[] {
    const found =
      scope === "*"
        ? rows(this.sql, IdRow, `SELECT id FROM session_machines ORDER BY id`)
        : rows(this.sql, IdRow, `SELECT id FROM session_machines WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, JSON.stringify(scope));
    return found.map((r) => r.id);
  }

  /**
   * The machines a live list watches, of a scope, by id: those with sessions, and those connected now (their
   * object is up for the tunnel anyway). An offline machine without sessions is not woken to be watched.
   */
  toWatch(scope: "*" | string[]): string[] {
    const watched = `SELECT id FROM session_machines UNION SELECT id FROM machines WHERE connected = 1`;
    const found =
      scope === "*"
        ? rows(this.sql, IdRow, `${watched} ORDER BY id`)
        : rows(this.sql, IdRow, `SELECT id FROM (${watched}) WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, JSON.stringify(scope));
    return found.map((r) => r.id);
  }

  /** One page of machines by id, after `after`. */
  list(page: { limit?: number; after?: string } = {}): { machines: Machine[]; nextAfter: string | null } {
    const limit = page.limit ?? 500;
    const found = rows(this.sql, MachineRow, `SELECT * FROM machines WHERE id > ? ORDER BY id LIMIT ?`, page.after ?? "", limit + 1);
    const machines = found.slice(0, limit);
    return { machines, nextAfter: found.length > limit ? machines.at(-1)!.id : null };
  }

  /** The machines of a token's scope (at most 256 ids), by id: only those rows are read. */
  byIds(ids: string[]): Machine[] {
    return rows(this.sql, MachineRow, `SELECT * FROM machines WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, JSON.stringify(ids));
  }

  /** Connected machines by id after `after`: a batch of a fan-out. */
  connectedAfter(after: string, limit: number): string[] {
    return rows(this.sql, IdRow, `SELECT id FROM machines WHERE connected = 1 AND id > ? ORDER BY id LIMIT ?`, after, limit).map((r) => r.id);
  }
}
