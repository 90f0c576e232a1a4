/**
 * The SQL of a machine's tasks (docs/architecture.md, "Tasks"): one row a task, its request as given and
 * its state and result as they change. The table is made when first used, so a machine that never runs
 * a task pays nothing for it.
 */
import { TASK_LIMITS, type TaskFilter, TaskOrigin, TaskResult, TaskState } from "@agent-runtime/protocol/tasks";
import { z } from "zod";
import { LazySchema, type Migration } from "../storage/migrations";
import { firstRow, rows, writeRow } from "../storage/stored";

export const TASK_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "tasks: what was asked, where it runs, its state and result",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS tasks (
        id TEXT PRIMARY KEY, agent TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT NOT NULL, prompt TEXT NOT NULL,
        worktree TEXT, policy TEXT, deadline_s INTEGER NOT NULL, notify INTEGER NOT NULL, state TEXT NOT NULL,
        session_id TEXT, acp_session_id TEXT, created_by TEXT NOT NULL, created_at INTEGER NOT NULL,
        started_at INTEGER, ended_at INTEGER, result TEXT, report TEXT
      )`);
      sql.exec(`CREATE INDEX IF NOT EXISTS tasks_by_age ON tasks (created_at DESC, id DESC)`);
      sql.exec(`CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, created_at)`);
      sql.exec(`CREATE INDEX IF NOT EXISTS tasks_by_session ON tasks (session_id)`);
    },
  },
  {
    version: 2,
    does: "sandboxes: what started each task (a caller, a schedule, a trigger); tasks from before were a caller's",
    up(sql) {
      sql.exec(`ALTER TABLE tasks ADD COLUMN origin TEXT NOT NULL DEFAULT 'task'`);
    },
  },
];

export const TaskRow = z.object({
  id: z.string(),
  agent: z.string(),
  cwd: z.string(),
  title: z.string(),
  /** JSON: the ACP ContentBlocks sent. */
  prompt: z.string(),
  /** JSON of the worktree asked for, or null. */
  worktree: z.string().nullable(),
  /** JSON of the task's own policy, or null. */
  policy: z.string().nullable(),
  deadline_s: z.number(),
  notify: z.number(),
  /** `waiting` is never stored: it is a running task whose session waits for a person. */
  state: TaskState.exclude(["waiting"]),
  session_id: z.string().nullable(),
  acp_session_id: z.string().nullable(),
  created_by: z.string(),
  created_at: z.number(),
  started_at: z.number().nullable(),
  ended_at: z.number().nullable(),
  /** JSON TaskResult, once it ended. */
  result: z.string().nullable(),
  /** JSON IssueRef: where its result is posted (a GitHub trigger's task), or null. */
  report: z.string().nullable(),
  /** What started it (TaskOrigin): the team's sandbox rules match on it. */
  origin: TaskOrigin,
});
export type TaskRow = z.output<typeof TaskRow>;

export class TaskStore {
  private readonly db: LazySchema;

  constructor(storage: DurableObjectStorage) {
    this.db = new LazySchema(storage, "tasks", TASK_MIGRATIONS);
  }

  /** Whether this machine ever had a task (no table is made to find out). */
  any(): boolean {
    return this.db.has("tasks");
  }

  /** Write a task's row whole (a new one, or one whose state changed). */
  put(row: TaskRow): void {
    writeRow(this.db.sql, "tasks", row);
  }

  get(id: string): TaskRow | null {
    return firstRow(this.db.sql, TaskRow, `SELECT * FROM tasks WHERE id = ?`, id);
  }

  bySession(sessionId: string): TaskRow | null {
    if (!this.any()) return null;
    return firstRow(this.db.sql, TaskRow, `SELECT * FROM tasks WHERE session_id = ?`, sessionId);
  }

  /** Tasks in a state, oldest first. */
  inState(state: TaskRow["state"]): TaskRow[] {
    if (!this.any()) return [];
    return rows(this.db.sql, TaskRow, `SELECT * FROM tasks WHERE state = ? ORDER BY created_at, id`, state);
  }

  count(state: TaskRow["state"]): number {
    if (!this.any()) return 0;
    return Number(this.db.sql.exec(`SELECT COUNT(*) AS n FROM tasks WHERE state = ?`, state).one().n);
  }

  /** A page, newest first, strictly before `before`; `waiting` is read as running (the caller tells them apart). */
  list(filter: TaskFilter, before: { atMs: number; id: string } | null, limit: number): TaskRow[] {
    if (!this.any()) return [];
    const state = filter.state === "waiting" ? "running" : filter.state;
    const filters: [string, (string | number)[] | undefined][] = [
      ["agent = ?", filter.agent === undefined ? undefined : [filter.agent]],
      ["state = ?", state === undefined ? undefined : [state]],
      ["created_by = ?", filter.createdBy === undefined ? undefined : [filter.createdBy]],
      ["(created_at < ? OR (created_at = ? AND id < ?))", before ? [before.atMs, before.atMs, before.id] : undefined],
    ];
    const used = filters.filter((f): f is [string, (string | number)[]] => f[1] !== undefined);
    const where = used.length ? `WHERE ${used.map(([clause]) => clause).join(" AND ")}` : "";
    return rows(this.db.sql, TaskRow, `SELECT * FROM tasks ${where} ORDER BY created_at DESC, id DESC LIMIT ?`, ...used.flatMap(([, v]) => v), limit);
  }

  /** Past TASK_LIMITS.keptPerMachine, the oldest finished tasks go. */
  trim(): void {
    this.db.sql.exec(
      `DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE state NOT IN ('queued', 'running') ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`,
      TASK_LIMITS.keptPerMachine,
    );
  }
}

export function resultOf(row: TaskRow): TaskResult | null {
  return row.result ? TaskResult.parse(JSON.parse(row.result)) : null;
}

/** What started a task, read back through its schema (a row from before origins were kept reads as `task`). */
export function originOf(row: TaskRow): TaskOrigin {
  const parsed = TaskOrigin.safeParse(row.origin);
  return parsed.success ? parsed.data : "task";
}
