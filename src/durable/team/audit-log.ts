/**
 * The team's append-only audit log (docs/architecture.md, "Trust"; SECURITY.md, "The audit log"): one row
 * per changing call, refusal or refused token, written after the answer; trimmed to the newest
 * AUDIT_KEEP_ENTRIES and AUDIT_KEEP_MS every 256 appends.
 */
import { AuditEntry, type AuditPage, type AuditQuery, type MachineScope } from "@agent-runtime/protocol/trust";
import { z } from "zod";
import { rows } from "../storage/stored";

/** The audit log keeps the newest entries, at most this many and at most this old. */
export const AUDIT_KEEP_ENTRIES = 100_000;
export const AUDIT_KEEP_MS = 90 * 86_400_000;

/** An entry's row, read as the API answers it. */
const Row = z
  .object({
    seq: z.number(),
    at_ms: z.number(),
    token: z.string(),
    role: AuditEntry.shape.role,
    method: z.string(),
    route: z.string(),
    machine: z.string().nullable(),
    status: z.number(),
  })
  .transform(
    (r): AuditEntry => ({ seq: r.seq, atMs: r.at_ms, token: r.token, role: r.role, method: r.method, route: r.route, machine: r.machine, status: r.status }),
  );

export class AuditLog {
  constructor(private readonly sql: SqlStorage) {}

  append(entry: Omit<AuditEntry, "seq">): void {
    const cursor = this.sql.exec(
      `INSERT INTO audit (at_ms, token, role, method, route, machine, status) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
      entry.atMs,
      entry.token,
      entry.role,
      entry.method,
      entry.route,
      entry.machine,
      entry.status,
    );
    const seq = Number(cursor.one().seq);
    // Trim now and then rather than on every append: one indexed delete per 256 entries.
    if (seq % 256 === 0) this.sql.exec(`DELETE FROM audit WHERE seq <= ? OR at_ms < ?`, seq - AUDIT_KEEP_ENTRIES, Date.now() - AUDIT_KEEP_MS);
  }

  /** A page of the log, newest first; a scope other than `*` reads only entries of its machines. */
  read(query: AuditQuery, scope: MachineScope = "*"): AuditPage {
    const filters: [string, string | number | undefined][] = [
      ["machine IN (SELECT value FROM json_each(?))", scope === "*" ? undefined : JSON.stringify(scope)],
      ["seq < ?", query.before],
      ["token = ?", query.token],
      ["machine = ?", query.machine],
      ["status = ?", query.status],
      ["at_ms >= ?", query.sinceMs],
    ];
    const used = filters.filter((f): f is [string, string | number] => f[1] !== undefined);
    const where = used.map(([clause]) => clause);
    const params = used.map(([, value]) => value);
    const limit = query.limit ?? 100;
    const found = rows(
      this.sql,
      Row,
      `SELECT * FROM audit ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT ?`,
      ...params,
      limit + 1,
    );
    const entries = found.slice(0, limit);
    return { entries, nextBefore: found.length > limit ? entries.at(-1)!.seq : null };
  }
}
