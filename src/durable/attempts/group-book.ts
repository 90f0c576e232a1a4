/**
 * The team's attempt groups (docs/architecture.md, "Attempt groups"): one row a group, its record whole
 * (a handful of attempts), in the team object's storage under a schema of its own, made when first used.
 * A group is written when it starts, when an attempt reports (start, check, end) and when a person picks,
 * discards or cancels: never per message.
 */
import { AttemptGroup, type GroupBase, AttemptsTemplate } from "@agent-runtime/protocol/attempts";
import { z } from "zod";
import { type Migration, migrate } from "../storage/migrations";

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

const Row = z.object({ id: z.string(), machines: z.string(), record: z.string() });

export type { GroupBase };

export class GroupBook {
  private migrated = false;

  constructor(private readonly storage: DurableObjectStorage) {}

  private get sql(): SqlStorage {
    if (!this.migrated) {
      migrate(this.storage, "attempt_groups", GROUP_MIGRATIONS);
      this.migrated = true;
    }
    return this.storage.sql;
  }

  put(group: AttemptGroup): void {
    const machines = [...new Set(group.attempts.map((a) => a.machine))];
    this.sql.exec(
      `INSERT OR REPLACE INTO attempt_groups (id, created_at, machines, record) VALUES (?, ?, ?, ?)`,
      group.id,
      group.createdAtMs,
      JSON.stringify(machines),
      JSON.stringify(group),
    );
  }

  get(id: string): AttemptGroup | null {
    const row = this.sql.exec(`SELECT id, machines, record FROM attempt_groups WHERE id = ?`, id).toArray()[0];
    return row ? AttemptGroup.parse(JSON.parse(Row.parse(row).record)) : null;
  }

  /** Newest first, only groups whose every machine is in `scope`. */
  list(scope: "*" | string[], limit: number): AttemptGroup[] {
    const groups: AttemptGroup[] = [];
    for (const raw of this.sql.exec(`SELECT id, machines, record FROM attempt_groups ORDER BY created_at DESC, id DESC`)) {
      const row = Row.parse(raw);
      const machines = z.array(z.string()).parse(JSON.parse(row.machines));
      if (scope !== "*" && !machines.every((m) => scope.includes(m))) continue;
      groups.push(AttemptGroup.parse(JSON.parse(row.record)));
      if (groups.length >= limit) break;
    }
    return groups;
  }

  /** The running groups with an attempt on `machine` (a machine's object reconciles its attempts with them). */
  runningOn(machine: string): AttemptGroup[] {
    return this.sql
      .exec(
        `SELECT id, machines, record FROM attempt_groups WHERE json_extract(record, '$.state') = 'running' AND machines LIKE ?`,
        `%${JSON.stringify(machine)}%`,
      )
      .toArray()
      .map((raw) => AttemptGroup.parse(JSON.parse(Row.parse(raw).record)));
  }

  trim(): void {
    this.sql.exec(`DELETE FROM attempt_groups WHERE id IN (SELECT id FROM attempt_groups ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`, GROUPS_KEPT);
  }

  /** A trigger's or a schedule's attempts (null: it starts one task), kept beside its own row in the team's tables. */
  keepTemplate(owner: string, spec: AttemptsTemplate | null): void {
    if (spec) this.sql.exec(`INSERT OR REPLACE INTO template_attempts (owner_id, spec) VALUES (?, ?)`, owner, JSON.stringify(spec));
    else this.sql.exec(`DELETE FROM template_attempts WHERE owner_id = ?`, owner);
  }

  templateOf(owner: string): AttemptsTemplate | null {
    const row = this.sql.exec(`SELECT spec FROM template_attempts WHERE owner_id = ?`, owner).toArray()[0];
    return row ? AttemptsTemplate.parse(JSON.parse(z.object({ spec: z.string() }).parse(row).spec)) : null;
  }
}
