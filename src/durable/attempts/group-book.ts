/**
 * The team's attempt groups (docs/architecture.md, "Attempt groups"): one row a group, its record whole
 * (a handful of attempts), in the team object's storage under a schema of its own, made when first used.
 * A group is written when it starts, when an attempt reports (start, check, end) and when a person picks,
 * discards or cancels: never per message.
 */
import { AttemptGroup, type GroupBase, AttemptsTemplate } from "@agent-runtime/protocol/attempts";
import { z } from "zod";
import { LazySchema, type Migration } from "../storage/migrations";
import { firstRow, jsonText, parseStored, rows, writeRow } from "../storage/stored";

export const GROUP_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "attempt_groups: each group's record and the machines it spans; template_attempts: the groups GitHub triggers and schedules start",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS attempt_groups (
        id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, machines TEXT NOT NULL, record TEXT NOT NULL
      )`);
      sql.exec(`CREATE INDEX IF NOT EXISTS attempt_groups_by_age ON attempt_groups (created_at DESC, id DESC)`);
      sql.exec(`CREATE TABLE IF NOT EXISTS template_attempts (owner_id TEXT PRIMARY KEY, spec TEXT NOT NULL)`);
    },
  },
];

/** Groups kept: the oldest go first. */
export const GROUPS_KEPT = 1000;

/** A group's row: the machines it spans and its record, JSON read through their schemas. */
const Spans = z.object({ machines: jsonText(z.array(z.string())) });
const Row = Spans.extend({ record: jsonText(AttemptGroup) });
const WHERE = "a row of attempt_groups";
const Template = z.object({ spec: jsonText(AttemptsTemplate) });

export type { GroupBase };

export class GroupBook {
  private readonly db: LazySchema;

  constructor(storage: DurableObjectStorage) {
    this.db = new LazySchema(storage, "attempt_groups", GROUP_MIGRATIONS);
  }

  put(group: AttemptGroup): void {
    const machines = [...new Set(group.attempts.map((a) => a.machine))];
    writeRow(this.db.sql, "attempt_groups", { id: group.id, created_at: group.createdAtMs, machines: JSON.stringify(machines), record: JSON.stringify(group) });
  }

  get(id: string): AttemptGroup | null {
    return firstRow(this.db.sql, Row, `SELECT machines, record FROM attempt_groups WHERE id = ?`, id)?.record ?? null;
  }

  /** Newest first, only groups whose every machine is in `scope`. */
  list(scope: "*" | string[], limit: number): AttemptGroup[] {
    const groups: AttemptGroup[] = [];
    for (const raw of this.db.sql.exec(`SELECT machines, record FROM attempt_groups ORDER BY created_at DESC, id DESC`)) {
      // A group outside the scope is passed over before its record is read.
      if (scope !== "*" && !parseStored(Spans, raw, WHERE).machines.every((m) => scope.includes(m))) continue;
      groups.push(parseStored(Row, raw, WHERE).record);
      if (groups.length >= limit) break;
    }
    return groups;
  }

  /** The running groups with an attempt on `machine` (a machine's object reconciles its attempts with them). */
  runningOn(machine: string): AttemptGroup[] {
    const running = `SELECT machines, record FROM attempt_groups WHERE json_extract(record, '$.state') = 'running' AND machines LIKE ?`;
    return rows(this.db.sql, Row, running, `%${JSON.stringify(machine)}%`).map((row) => row.record);
  }

  trim(): void {
    this.db.sql.exec(`DELETE FROM attempt_groups WHERE id IN (SELECT id FROM attempt_groups ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`, GROUPS_KEPT);
  }

  /** A trigger's or a schedule's attempts (null: it starts one task), kept beside its own row in the team's tables. */
  keepTemplate(owner: string, spec: AttemptsTemplate | null): void {
    if (spec) writeRow(this.db.sql, "template_attempts", { owner_id: owner, spec: JSON.stringify(spec) });
    else this.db.sql.exec(`DELETE FROM template_attempts WHERE owner_id = ?`, owner);
  }

  templateOf(owner: string): AttemptsTemplate | null {
    return firstRow(this.db.sql, Template, `SELECT spec FROM template_attempts WHERE owner_id = ?`, owner)?.spec ?? null;
  }
}
