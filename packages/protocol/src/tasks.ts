/**
 * Tasks (docs/architecture.md, "Tasks"): a session the runtime starts and drives itself, one prompt to
 * its end, on a machine that may be away when it is asked for. Ids name their machine, as session ids do.
 */
import { z } from "zod";
import { PermissionPolicy } from "./policy";
import { WorkOrigin } from "./sandbox";
import { SessionId } from "./sessions";
import { TurnChanges, WorktreeRequest } from "./review";
import { AgentId, Identifier } from "./values";
import { machineOfRoutedId, machineRoutedId } from "./ids";
import { resource, strictResource } from "./resource";

export const TaskId = machineRoutedId("TaskId", "task", "task");

/** The machine a task id names. */
export function machineOfTask(id: string): string {
  return machineOfRoutedId("task", id);
}

export const TASK_STATES = ["queued", "running", "waiting", "succeeded", "failed", "cancelled", "timed_out"] as const;
export const TaskState = z.enum(TASK_STATES).meta({
  id: "TaskState",
  description:
    "queued: the machine is away or runs its limit of tasks; running; waiting: a person is asked (the policy said ask); then succeeded, failed, cancelled or timed_out",
});
export type TaskState = z.infer<typeof TaskState>;
export const FINISHED_TASK_STATES: ReadonlySet<TaskState> = new Set(["succeeded", "failed", "cancelled", "timed_out"]);

/** At most this long a task may run (its deadline), and by default. */
export const TASK_DEADLINE_MAX_SECONDS = 24 * 3600;
export const TASK_DEADLINE_DEFAULT_SECONDS = 3600;

export const TaskRequest = strictResource("TaskRequest", {
  machine: Identifier.optional().describe("where it runs (else the machine the path names, or DEFAULT_MACHINE)"),
  agent: AgentId,
  cwd: z.string().min(1).max(4096).describe("the folder it works in, on the machine"),
  prompt: z
    .union([
      z.string().min(1).max(100_000),
      z
        .array(z.object({ type: z.string().min(1).max(64) }).passthrough())
        .min(1)
        .max(64),
    ])
    .describe("what to do: text, or ACP ContentBlocks"),
  worktree: z
    .object({ base: z.string().min(1).max(256).optional(), name: z.string().min(1).max(64).optional(), branch: WorktreeRequest.shape.branch })
    .strict()
    .optional()
    .describe("run in a new git worktree of the folder's repository, on its own branch (from base)"),
  policy: PermissionPolicy.optional().describe("the task's own permission policy, on top of the team's (it never loosens a team deny or ask)"),
  deadlineSeconds: z
    .number()
    .int()
    .min(10)
    .max(TASK_DEADLINE_MAX_SECONDS)
    .optional()
    .describe(`how long it may run once started (default ${TASK_DEADLINE_DEFAULT_SECONDS}); past it the turn is cancelled: timed_out`),
  notify: z.boolean().optional().describe("whether its session's events (a question, its end) notify as any session's do (default true)"),
  maxCostUsd: z
    .number()
    .positive()
    .max(1_000_000)
    .optional()
    .describe("once the cost its agent reports (in USD) passes this, the task is cancelled, and its error says so"),
});
export type TaskRequest = z.infer<typeof TaskRequest>;

export const TaskResult = resource("TaskResult", {
  stopReason: z.string().nullable().describe("the agent's stop reason (end_turn, cancelled, refusal, …)"),
  lastMessage: z.string().nullable().describe("the agent's last line of text"),
  changes: TurnChanges.nullable().describe("what the turn changed in the folder"),
  branch: z.string().nullable().describe("the worktree's branch, when it ran in one"),
  error: z.string().nullable().describe("why it failed"),
});
export type TaskResult = z.infer<typeof TaskResult>;

/** What starts a task (sandbox-rules.ts matches on it): a caller of `POST /v1/tasks`, a schedule, a GitHub trigger. */
export const TaskOrigin = WorkOrigin.exclude(["session"]);
export type TaskOrigin = z.infer<typeof TaskOrigin>;

export const Task = resource("Task", {
  id: TaskId,
  machine: z.string(),
  agent: AgentId,
  cwd: z.string(),
  title: z.string().describe("the first line of its prompt"),
  state: TaskState,
  session: SessionId.nullable().describe("the session it runs in, once started"),
  createdBy: z.string(),
  createdAtMs: z.number().int(),
  startedAtMs: z.number().int().nullable(),
  endedAtMs: z.number().int().nullable(),
  deadlineSeconds: z.number().int(),
  worktree: z.boolean(),
  origin: TaskOrigin.describe("what started it: a caller (`task`), a schedule or a GitHub trigger; the team's sandbox rules match on it"),
  result: TaskResult.nullable(),
});
export type Task = z.infer<typeof Task>;

export const TaskList = resource("TaskList", {
  tasks: z.array(Task),
  nextCursor: z.string().nullable().describe("pass as ?cursor= for the next (older) page"),
});
export type TaskList = z.infer<typeof TaskList>;

/** One machine's page of a task list. */
export const TaskPage = z.object({ tasks: z.array(Task), more: z.boolean() });
export type TaskPage = z.infer<typeof TaskPage>;

export const TaskFilter = z.object({ agent: AgentId.optional(), state: TaskState.optional(), createdBy: z.string().max(128).optional() });
export type TaskFilter = z.infer<typeof TaskFilter>;

/** Where a task started by a GitHub delivery posts its result: the issue, through the machine's GitHub CLI. */
export const IssueRef = z.object({
  repository: z.string().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, "owner/name"),
  issue: z.number().int().min(1),
});
export type IssueRef = z.infer<typeof IssueRef>;

/** What a route asks of a machine's tasks: one RPC of the machine's object, parsed there. */
export const TaskCall = z.discriminatedUnion("op", [
  z.object({
    op: z.literal("submit"),
    request: TaskRequest,
    machine: Identifier,
    who: z.string().max(128),
    report: IssueRef.optional().describe("a GitHub trigger's task: its result goes to the issue as a comment"),
    origin: TaskOrigin.default("task").describe("what started it: the team's sandbox rules match on it"),
  }),
  z.object({ op: z.literal("get"), id: TaskId }),
  z.object({ op: z.literal("cancel"), id: TaskId, who: z.string().max(128) }),
  z.object({
    op: z.literal("list"),
    filter: TaskFilter,
    before: z.object({ atMs: z.number().int(), id: z.string() }).nullable(),
    limit: z.number().int().min(1).max(200),
  }),
]);
export type TaskCall = z.infer<typeof TaskCall>;

/** Limits on tasks (docs/tasks.md, "Tasks"). */
export const TASK_LIMITS = {
  /** Tasks running at once on one machine; more wait, queued. */
  runningPerMachine: 4,
  /** Tasks queued on one machine; more are refused (429). */
  queuedPerMachine: 100,
  /** Finished tasks kept per machine (the oldest go first). */
  keptPerMachine: 1000,
} as const;
