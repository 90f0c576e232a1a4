/**
 * A machine's share of attempt groups (docs/architecture.md, "Attempt groups"): one row an attempt it
 * runs, beside its task: what was asked, where its worktree is once made, and where it is in its life
 * after the turn (settled, checking, reported). The table is made when first used.
 */
import { AttemptReport, AttemptRun, CheckResult } from "@agent-runtime/protocol/attempts";
import { z } from "zod";
import { type Migration, migrate } from "../storage/migrations";

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

const Row = z.object({
  grp: z.string(),
  n: z.number(),
  task_id: z.string().nullable(),
  run: z.string(),
  phase: RunPhase,
  worktree: z.string().nullable(),
  acp: z.string().nullable(),
  check_result: z.string().nullable(),
  discarded: z.number(),
  final_report: z.string().nullable(),
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

function parse(raw: unknown): RunRecord {
  const row = Row.parse(raw);
  return {
    group: row.grp,
    n: row.n,
    task: row.task_id,
    run: AttemptRun.parse(JSON.parse(row.run)),
    phase: row.phase,
    worktree: row.worktree ? RunWorktree.parse(JSON.parse(row.worktree)) : null,
    acp: row.acp ? AcpRef.parse(JSON.parse(row.acp)) : null,
    check: row.check_result ? CheckResult.parse(JSON.parse(row.check_result)) : null,
    discarded: row.discarded === 1,
    final: row.final_report ? AttemptReport.parse(JSON.parse(row.final_report)) : null,
    unsent: row.unsent === 1,
  };
}

export class RunStore {
  private migrated = false;

  constructor(private readonly storage: DurableObjectStorage) {}

  private get sql(): SqlStorage {
    if (!this.migrated) {
      migrate(this.storage, "attempt_runs", RUN_MIGRATIONS);
      this.migrated = true;
    }
    return this.storage.sql;
  }

  put(r: RunRecord): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO attempt_runs (grp, n, task_id, run, phase, worktree, acp, check_result, discarded, final_report, unsent)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      r.group,
      r.n,
      r.task,
      JSON.stringify(r.run),
      r.phase,
      r.worktree ? JSON.stringify(r.worktree) : null,
      r.acp ? JSON.stringify(r.acp) : null,
      r.check ? JSON.stringify(r.check) : null,
      r.discarded ? 1 : 0,
      r.final ? JSON.stringify(r.final) : null,
      r.unsent ? 1 : 0,
    );
  }

  get(group: string, n: number): RunRecord | null {
    const row = this.sql.exec(`SELECT * FROM attempt_runs WHERE grp = ? AND n = ?`, group, n).toArray()[0];
    return row ? parse(row) : null;
  }

  /** Whether this machine ever ran an attempt (no table is made to find out). */
  used(): boolean {
    return this.migrated || this.storage.sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'attempt_runs'`).toArray().length > 0;
  }

  /** Whether a task is an attempt's (no table is made to find out). */
  byTask(taskId: string): RunRecord | null {
    if (!this.used()) return null;
    const row = this.sql.exec(`SELECT * FROM attempt_runs WHERE task_id = ?`, taskId).toArray()[0];
    return row ? parse(row) : null;
  }

  /** Whether a report to the team failed and was not sent since (no table is made to find out). */
  anyUnsent(): boolean {
    return this.used() && this.sql.exec(`SELECT 1 FROM attempt_runs WHERE unsent = 1 LIMIT 1`).toArray().length > 0;
  }

  markSent(group: string, n: number, unsent: boolean): void {
    this.sql.exec(`UPDATE attempt_runs SET unsent = ? WHERE grp = ? AND n = ?`, unsent ? 1 : 0, group, n);
  }

  clearUnsent(): void {
    if (this.used()) this.sql.exec(`UPDATE attempt_runs SET unsent = 0 WHERE unsent = 1`);
  }

  ofGroup(group: string): RunRecord[] {
    return this.sql
      .exec(`SELECT * FROM attempt_runs WHERE grp = ? ORDER BY n`, group)
      .toArray()
      .map((row) => parse(row));
  }
}
