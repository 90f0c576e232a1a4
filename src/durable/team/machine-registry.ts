/**
 * The team's registry of machines (docs/architecture.md, "Idle cost"): written when a sidecar connects
 * or disconnects, never per request or per heartbeat; and the machines that recorded sessions (written
 * once per machine), which lists of sessions and deliveries ask.
 */
import type { Machine } from "@agent-runtime/protocol/machines";
import { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";

type MachineRow = {
  id: string;
  connected: number;
  connected_at_ms: number | null;
  last_seen_ms: number | null;
  sidecar_version: string | null;
  platform: string | null;
  sandbox: string | null;
};

/** The stored hello's sandbox, parsed (what storage holds is read back through its schema). */
function sandboxOf(json: string | null): MachineSandbox | null {
  if (json === null) return null;
  try {
    const parsed = MachineSandbox.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function machineOf(r: MachineRow): Machine {
  return {
    id: r.id,
    connected: r.connected === 1,
    connectedAtMs: r.connected_at_ms,
    lastSeenMs: r.last_seen_ms,
    sidecarVersion: r.sidecar_version,
    sidecarOutdated: r.sidecar_version !== null && sidecarVersionAdvice(r.sidecar_version).outdated,
    platform: r.platform,
    sandbox: sandboxOf(r.sandbox),
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
    const rows =
      scope === "*"
        ? this.sql.exec<{ id: string }>(`SELECT id FROM session_machines ORDER BY id`)
        : this.sql.exec<{ id: string }>(`SELECT id FROM session_machines WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, JSON.stringify(scope));
    return rows.toArray().map((r) => r.id);
  }

  /** One page of machines by id, after `after`. */
  list(page: { limit?: number; after?: string } = {}): { machines: Machine[]; nextAfter: string | null } {
    const limit = page.limit ?? 500;
    const rows = this.sql.exec<MachineRow>(`SELECT * FROM machines WHERE id > ? ORDER BY id LIMIT ?`, page.after ?? "", limit + 1).toArray();
    const machines = rows.slice(0, limit).map(machineOf);
    return { machines, nextAfter: rows.length > limit ? machines.at(-1)!.id : null };
  }

  /** The machines of a token's scope (at most 256 ids), by id: only those rows are read. */
  byIds(ids: string[]): Machine[] {
    return this.sql
      .exec<MachineRow>(`SELECT * FROM machines WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, JSON.stringify(ids))
      .toArray()
      .map(machineOf);
  }

  /** Connected machines by id after `after`: a batch of a fan-out. */
  connectedAfter(after: string, limit: number): string[] {
    return this.sql
      .exec<{ id: string }>(`SELECT id FROM machines WHERE connected = 1 AND id > ? ORDER BY id LIMIT ?`, after, limit)
      .toArray()
      .map((r) => r.id);
  }
}
