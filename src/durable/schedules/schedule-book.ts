/**
 * Schedules in the team's object (docs/architecture.md, "Schedules"): each a cron expression in a time
 * zone and the task it starts. The object's one alarm (shared, storage/alarm.ts) rings at the earliest
 * next run; each due schedule starts its task on its machine, once however many times were missed while
 * the deployment was down, and skips (recorded) while its last run's task is still going.
 */
import { Cron } from "croner";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import {
  MAX_SCHEDULES,
  MAX_SCHEDULES_PER_MACHINE,
  SCHEDULE_RUNS_KEPT,
  type Schedule,
  type ScheduleRequest,
  type ScheduleRun,
  ScheduleRun as ScheduleRunSchema,
  ScheduleTask,
} from "@agent-runtime/protocol/schedules";
import { z } from "zod";
import { randomHex16 } from "../../lib/ids";
import { Earliest, oneRow, rows, writeRow } from "../storage/stored";
import type { Timed } from "../storage/alarm";
import { RecordTable } from "../storage/record-table";
import { noRoom } from "../storage/room";

const Row = z.object({
  id: z.string(),
  machine: z.string(),
  cron: z.string(),
  timezone: z.string(),
  task: z.string(),
  paused: z.number(),
  created_by: z.string(),
  created_at: z.number(),
  next_run_at: z.number().nullable(),
  runs: z.string(),
});
type Row = z.output<typeof Row>;

export interface ScheduleHost {
  /** Start a run's task on its machine; its id, or why not. */
  start(schedule: Schedule): Promise<Outcome<{ id: string }>>;
  /** Is this task still queued or running? */
  going(task: string): Promise<boolean>;
}

/** The next time a cron expression names after `after`, in its time zone; a problem when it is not one. */
export function nextRun(cron: string, timezone: string, after: number): Outcome<number | null> {
  try {
    const next = new Cron(cron, { timezone, paused: true }).nextRun(new Date(after));
    return { ok: true, value: next ? next.getTime() : null };
  } catch (err) {
    return { ok: false, problem: { code: "invalid_request", detail: `not a schedule: ${err instanceof Error ? err.message : String(err)}` } };
  }
}

const Runs = z.array(ScheduleRunSchema);

/** The team's schedules: listed, read and deleted as its other records are (record-table.ts). */
export class ScheduleBook extends RecordTable<typeof Row, Schedule> implements Timed {
  constructor(
    sql: SqlStorage,
    private readonly host: ScheduleHost,
  ) {
    super(sql, "schedules", Row, toSchedule);
  }

  create(request: ScheduleRequest, who: string, now = Date.now()): Outcome<Schedule> {
    const next = nextRun(request.cron, request.timezone, now);
    if (!next.ok) return next;
    const full = noRoom(this.sql, "schedules", "machine", request.task.machine, { perMachine: MAX_SCHEDULES_PER_MACHINE, team: MAX_SCHEDULES });
    if (full) return full;
    const row: Row = {
      id: `sch-${randomHex16()}`,
      machine: request.task.machine,
      cron: request.cron,
      timezone: request.timezone,
      task: JSON.stringify(request.task),
      paused: request.paused ? 1 : 0,
      created_by: who,
      created_at: now,
      next_run_at: request.paused ? null : next.value,
      runs: "[]",
    };
    this.put(row);
    return { ok: true, value: toSchedule(row) };
  }

  /** Pause or resume; a resumed schedule runs next at its next time from now (what it missed paused is not run). */
  setPaused(id: string, paused: boolean, now = Date.now()): Outcome<Schedule> {
    const row = this.row(id);
    if (!row) return notFound(id);
    const next = paused ? null : nextRun(row.cron, row.timezone, now);
    if (next && !next.ok) return next;
    const updated = { ...row, paused: paused ? 1 : 0, next_run_at: next ? next.value : null };
    this.put(updated);
    return { ok: true, value: toSchedule(updated) };
  }

  /** The alarm rang: every schedule due runs once; answers when the next is due (null: none). */
  async run(now = Date.now()): Promise<number | null> {
    const due = rows(this.sql, Row, `SELECT * FROM schedules WHERE paused = 0 AND next_run_at IS NOT NULL AND next_run_at <= ?`, now);
    for (const row of due) {
      const runs = Runs.parse(JSON.parse(row.runs));
      const last = runs.find((r) => r.task !== null);
      let run: ScheduleRun;
      if (last?.task && (await this.host.going(last.task).catch(() => false))) {
        run = { atMs: now, task: null, skipped: `the last run (${last.task}) is still going` };
      } else {
        const started = await this.host.start(toSchedule(row)).catch((err: unknown): Outcome<{ id: string }> => ({ ok: false, problem: failed(err) }));
        run = started.ok ? { atMs: now, task: started.value.id, skipped: null } : { atMs: now, task: null, skipped: started.problem.detail };
      }
      // The next time after now: runs missed while the deployment was down are one run, this one.
      const next = nextRun(row.cron, row.timezone, now);
      this.put({ ...row, runs: JSON.stringify([run, ...runs].slice(0, SCHEDULE_RUNS_KEPT)), next_run_at: next.ok ? next.value : null });
    }
    return this.nextDueMs();
  }

  /** The team object's alarm (storage/alarm.ts): the schedules due run. */
  async runDue(nowMs: number): Promise<void> {
    await this.run(nowMs);
  }

  /** When the next schedule is due (null: none). */
  nextDueMs(): number | null {
    return oneRow(this.sql, Earliest, `SELECT MIN(next_run_at) AS at FROM schedules WHERE paused = 0`).at;
  }

  private put(row: Row): void {
    writeRow(this.sql, "schedules", row);
  }
}

function toSchedule(row: Row): Schedule {
  return {
    id: row.id,
    cron: row.cron,
    timezone: row.timezone,
    task: ScheduleTask.parse(JSON.parse(row.task)),
    paused: row.paused === 1,
    createdBy: row.created_by,
    createdAtMs: row.created_at,
    nextRunAtMs: row.next_run_at,
    runs: Runs.parse(JSON.parse(row.runs)),
  };
}

function notFound(id: string): Outcome<never> {
  return { ok: false, problem: { code: "not_found", detail: `no schedule '${id}'` } };
}

function failed(err: unknown): ProblemInit {
  return { code: "internal", detail: `the run could not start: ${err instanceof Error ? err.message : String(err)}` };
}
