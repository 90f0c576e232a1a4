/**
 * A machine's share of attempt groups (docs/architecture.md, "Attempt groups"): one row an attempt it
 * runs, beside its task: what was asked, where its worktree is once made, and where it is in its life
 * after the turn (settled, checking, reported). The table is made when first used.
 */
import { AttemptReport, AttemptRun, CheckResult } from "@agent-runtime/protocol/attempts";
import { z } from "zod";
import { LazySchema, type Migration } from "../storage/migrations";
import { firstRow, jsonText, rows, writeRow } from "../storage/stored";

export const RUN_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "attempt_runs: an attempt group's attempts on this machine, beside their tasks",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS attempt_runs (
        grp TEXT NOT NULL, n INTEGER NOT NULL, task_id TEXT, run TEXT NOT NULL, phase TEXT NOT NULL,
        worktree TEXT, acp TEXT, check_result TEXT, discarded INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (grp, n)
      )`);
      sql.exec(`CREATE INDEX IF NOT EXISTS attempt_runs_by_task ON attempt_runs (task_id)`);
    },
  },
  {
    version: 2,
    does: "attempt_runs: each attempt's final report (sent again when the team did not get it) and whether a report is unsent",
    up(sql) {
      sql.exec(`ALTER TABLE attempt_runs ADD COLUMN final_report TEXT`);
      sql.exec(`ALTER TABLE attempt_runs ADD COLUMN unsent INTEGER NOT NULL DEFAULT 0`);
    },
  },
];

/** turn: its task runs (or waits); checking: its check runs; cancelled: cancelled during its check; ended: reported finished. */
export const RunPhase = z.enum(["turn", "checking", "cancelled", "ended"]);
export const RunWorktree = z.object({ repository: z.string(), path: z.string(), branch: z.string() });
export type RunWorktree = z.infer<typeof RunWorktree>;
const AcpRef = z.object({ agent: z.string(), sessionId: z.string() });

/** A row, its JSON columns read through their schemas. */
const Row = z.object({
  grp: z.string(),
  n: z.number(),
  task_id: z.string().nullable(),
  run: jsonText(AttemptRun),
  phase: RunPhase,
  worktree: jsonText(RunWorktree).nullable(),
  acp: jsonText(AcpRef).nullable(),
  check_result: jsonText(CheckResult).nullable(),
  discarded: z.number(),
  final_report: jsonText(AttemptReport).nullable(),
  unsent: z.number(),
});

export interface RunRecord {
  group: string;
  n: number;
  task: string | null;
  run: AttemptRun;
  phase: z.infer<typeof RunPhase>;
  worktree: RunWorktree | null;
  acp: z.infer<typeof AcpRef> | null;
  check: CheckResult | null;
  discarded: boolean;
  /** What it said when it ended (kept: the team may not have heard it). */
  final: AttemptReport | null;
  /** A report to the team failed: the object's alarm reconciles with the team. */
  unsent: boolean;
}

const StoredRun = Row.transform(
  (row): RunRecord => ({
    group: row.grp,
    n: row.n,
    task: row.task_id,
    run: row.run,
    phase: row.phase,
    worktree: row.worktree,
    acp: row.acp,
    check: row.check_result,
    discarded: row.discarded === 1,
    final: row.final_report,
    unsent: row.unsent === 1,
  }),
);

/** A column's JSON, or null. */
function jsonOrNull(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

export class RunStore {
  private readonly db: LazySchema;

  constructor(storage: DurableObjectStorage) {
    this.db = new LazySchema(storage, "attempt_runs", RUN_MIGRATIONS);
  }

  put(r: RunRecord): void {
    writeRow(this.db.sql, "attempt_runs", {
      grp: r.group,
      n: r.n,
      task_id: r.task,
      run: JSON.stringify(r.run),
      phase: r.phase,
      worktree: jsonOrNull(r.worktree),
      acp: jsonOrNull(r.acp),
      check_result: jsonOrNull(r.check),
      discarded: r.discarded ? 1 : 0,
      final_report: jsonOrNull(r.final),
      unsent: r.unsent ? 1 : 0,
    });
  }

  get(group: string, n: number): RunRecord | null {
    return firstRow(this.db.sql, StoredRun, `SELECT * FROM attempt_runs WHERE grp = ? AND n = ?`, group, n);
  }

  /** Whether this machine ever ran an attempt (no table is made to find out). */
  used(): boolean {
    return this.db.has("attempt_runs");
  }

  /** Whether a task is an attempt's (no table is made to find out). */
  byTask(taskId: string): RunRecord | null {
    if (!this.used()) return null;
    return firstRow(this.db.sql, StoredRun, `SELECT * FROM attempt_runs WHERE task_id = ?`, taskId);
  }

  /** Whether a report to the team failed and was not sent since (no table is made to find out). */
  anyUnsent(): boolean {
    return this.used() && this.db.sql.exec(`SELECT 1 FROM attempt_runs WHERE unsent = 1 LIMIT 1`).toArray().length > 0;
  }

  markSent(group: string, n: number, unsent: boolean): void {
    this.db.sql.exec(`UPDATE attempt_runs SET unsent = ? WHERE grp = ? AND n = ?`, unsent ? 1 : 0, group, n);
  }

  clearUnsent(): void {
    if (this.used()) this.db.sql.exec(`UPDATE attempt_runs SET unsent = 0 WHERE unsent = 1`);
  }

  ofGroup(group: string): RunRecord[] {
    return rows(this.db.sql, StoredRun, `SELECT * FROM attempt_runs WHERE grp = ? ORDER BY n`, group);
  }
}
