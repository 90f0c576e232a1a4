/**
 * Attempt groups (docs/architecture.md, "Attempt groups"): one prompt run as 2–8 attempts, each an agent
 * on a machine, each a task in its own new worktree on its own branch from one base commit, each with an
 * optional check; compared side by side, one picked (merged or opened as a pull request), the rest
 * discarded on request. The group is a record of the team's; its attempts are tasks of their machines.
 */
import { z } from "zod";
import { PermissionPolicy } from "./policy";
import { IssueRef, TaskId, TaskOrigin } from "./tasks";
import { AgentId, Identifier } from "./values";
import { resource, strictResource } from "./resource";

export const GroupId = z
  .string()
  .regex(/^grp-[0-9a-f]{12}$/, "a group id as the runtime hands it out (grp-<12 hex>)")
  .meta({ id: "AttemptGroupId" });

/** A branch or commit name as git takes it on the command line: never an option. */
export const GitRef = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[^-\s~^:?*[\\][^\s~^:?*[\\]*$/, "a branch name or a commit");

export const ATTEMPTS_MIN = 2;
export const ATTEMPTS_MAX = 8;
/** Bytes of a check's output kept: its end, where a test runner says what failed. */
export const CHECK_TAIL_BYTES = 4096;
export const CHECK_TIMEOUT_DEFAULT_SECONDS = 600;

export const CheckSpec = strictResource("AttemptCheckSpec", {
  command: z.string().min(1).max(4000).describe("run with `sh -c` in the attempt's worktree once its agent's turn ended (npm test, pytest -q)"),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(24 * 3600)
    .optional()
    .describe(`default ${CHECK_TIMEOUT_DEFAULT_SECONDS}; never past the attempt's deadline`),
});
export type CheckSpec = z.infer<typeof CheckSpec>;

export const AttemptSpec = z
  .object({ agent: AgentId, machine: Identifier.optional().describe("default: the machine the path names, or DEFAULT_MACHINE") })
  .strict();

export const AttemptGroupRequest = strictResource("AttemptGroupRequest", {
  prompt: z.string().min(1).max(100_000).describe("what each attempt's agent is asked"),
  cwd: z.string().min(1).max(4096).describe("a folder of the repository, the same path on every machine named"),
  base: GitRef.optional().describe(
    "the branch (or commit) every attempt starts from; default: the folder's current branch on the first machine. With several machines, every machine must hold the commit it names on the first",
  ),
  attempts: z.array(AttemptSpec).min(ATTEMPTS_MIN).max(ATTEMPTS_MAX),
  check: CheckSpec.optional(),
  deadlineSeconds: z
    .number()
    .int()
    .min(10)
    .max(24 * 3600)
    .optional()
    .describe("each attempt's deadline once started (its turn and its check), as a task's"),
  policy: PermissionPolicy.optional().describe("each attempt's own permission policy, on top of the team's, as a task's (it never loosens a team deny or ask)"),
});
export type AttemptGroupRequest = z.infer<typeof AttemptGroupRequest>;

export const ATTEMPT_STATES = ["queued", "running", "checking", "done", "failed", "cancelled", "timed_out"] as const;
export const AttemptState = z.enum(ATTEMPT_STATES).meta({
  id: "AttemptState",
  description:
    "queued (its machine is away or busy), running (its agent's turn), checking (the check runs), then done (the turn ended: see check for passed or failed), failed, cancelled or timed_out",
});
export type AttemptState = z.infer<typeof AttemptState>;
export const FINISHED_ATTEMPT_STATES: ReadonlySet<AttemptState> = new Set(["done", "failed", "cancelled", "timed_out"]);

export const CheckResult = resource("AttemptCheck", {
  exitCode: z.number().int().nullable().describe("null: it did not exit by itself (timed out, cancelled)"),
  durationMs: z.number().int().min(0),
  tail: z.string().describe(`the last ${CHECK_TAIL_BYTES} bytes of its output (stdout and stderr, as written)`),
  timedOut: z.boolean(),
});
export type CheckResult = z.infer<typeof CheckResult>;

export const AttemptChanges = z
  .object({ files: z.number().int().min(0), added: z.number().int().min(0), removed: z.number().int().min(0) })
  .meta({ id: "AttemptChanges", description: "the attempt's branch against the base commit" });
export type AttemptChanges = z.infer<typeof AttemptChanges>;

export const Attempt = resource("Attempt", {
  n: z.number().int().min(1),
  agent: AgentId,
  machine: z.string(),
  task: TaskId.nullable().describe("its task, once its machine took it"),
  branch: z.string().describe("agent/<group>-<n>-<agent>"),
  state: AttemptState,
  verdict: z.enum(["passed", "failed", "no_check"]).nullable().describe("once done: the check's word (exit 0 passes), or no_check"),
  check: CheckResult.nullable(),
  changes: AttemptChanges.nullable(),
  costUsd: z.number().nullable().describe("what its agent reported it cost; null when it reports none"),
  startedAtMs: z.number().int().nullable(),
  endedAtMs: z.number().int().nullable(),
  durationMs: z.number().int().nullable().describe("from its start to its end (turn and check)"),
  error: z.string().nullable().describe("why it failed"),
  discarded: z.boolean().describe("its worktree and branch were removed on request"),
});
export type Attempt = z.infer<typeof Attempt>;

export const GroupBase = resource("AttemptGroupBase", {
  branch: z.string().nullable().describe("the branch a pick merges into; null when the base was a bare commit"),
  commit: z.string().regex(/^[0-9a-f]{40}$/),
  agreedOn: z.string().describe("the machine that resolved the base to its commit"),
});
export type GroupBase = z.infer<typeof GroupBase>;

export const PickResult = resource("AttemptPick", {
  n: z.number().int().min(1),
  action: z.enum(["merge", "pull-request"]),
  how: z.string().describe("fast-forward or merge commit; for a pull request, opened or the page that opens one"),
  commit: z.string().nullable().describe("the base branch's commit after a merge"),
  url: z.string().nullable().describe("the pull request, or the page that opens one"),
  atMs: z.number().int(),
  by: z.string(),
});
export type PickResult = z.infer<typeof PickResult>;

export const GROUP_STATES = ["running", "finished", "cancelled"] as const;
export const AttemptGroup = resource("AttemptGroup", {
  id: GroupId,
  state: z.enum(GROUP_STATES).describe("running while an attempt is not finished; then finished (or cancelled)"),
  title: z.string().describe("the first line of its prompt"),
  cwd: z.string(),
  base: GroupBase,
  check: CheckSpec.nullable(),
  deadlineSeconds: z.number().int(),
  createdBy: z.string(),
  createdAtMs: z.number().int(),
  attempts: z.array(Attempt),
  picked: PickResult.nullable(),
  issue: IssueRef.nullable().describe("a GitHub trigger's group: the issue its summary is posted on when every attempt finished"),
});
export type AttemptGroup = z.infer<typeof AttemptGroup>;

export const AttemptGroupList = resource("AttemptGroupList", { groups: z.array(AttemptGroup) });

export const PickRequest = strictResource("AttemptPickRequest", {
  n: z.number().int().min(1).max(ATTEMPTS_MAX),
  action: z.enum(["merge", "pull-request"]),
  title: z.string().min(1).max(256).optional().describe("the merge commit's or pull request's title (default: the group's title)"),
});
export type PickRequest = z.infer<typeof PickRequest>;

export const DiscardRequest = strictResource("AttemptDiscardRequest", {
  n: z.number().int().min(1).max(ATTEMPTS_MAX).optional().describe("one attempt; default: every attempt not picked"),
});

export const DiscardResult = resource("AttemptDiscardResult", {
  discarded: z.array(
    z.object({
      n: z.number().int(),
      worktree: z.boolean().describe("its worktree was removed (false: there was none)"),
      branch: z.boolean().describe("its branch was deleted"),
      checkpoints: z.boolean().describe("its session's checkpoints were dropped"),
    }),
  ),
  group: AttemptGroup,
});

export const AttemptDiffFile = z.object({ path: z.string(), status: z.string(), added: z.number().int().nullable(), removed: z.number().int().nullable() });
export const AttemptDiff = resource("AttemptDiff", {
  n: z.number().int(),
  against: z.union([z.literal("base"), z.number().int()]),
  from: z.string().describe("the commit or branch diffed from"),
  to: z.string().describe("the branch diffed to"),
  files: z.array(AttemptDiffFile),
  diff: z.string().describe("git's unified diff"),
  truncated: z.boolean().describe("the diff was longer than the bound and is cut"),
});
export type AttemptDiff = z.infer<typeof AttemptDiff>;

/** Which attempt, as the team's object and its machine's name it to each other: its group and its number in it. */
const AttemptKey = z.object({ group: GroupId, n: z.number().int().min(1) });

/** What an attempt's machine says of it as it goes: taken (its task), started, checking, ended. */
export const AttemptReport = AttemptKey.extend({
  state: AttemptState,
  task: TaskId.nullable(),
  startedAtMs: z.number().int().nullable(),
  endedAtMs: z.number().int().nullable(),
  check: CheckResult.nullable(),
  changes: AttemptChanges.nullable(),
  costUsd: z.number().nullable(),
  error: z.string().nullable(),
});
export type AttemptReport = z.infer<typeof AttemptReport>;

/** One attempt as its machine's object is asked to run it. */
export const AttemptRun = AttemptKey.extend({
  agent: AgentId,
  cwd: z.string(),
  prompt: z.string(),
  branch: z.string(),
  base: GroupBase,
  check: CheckSpec.nullable(),
  deadlineSeconds: z.number().int(),
  policy: PermissionPolicy.nullable(),
  who: z.string().max(128),
  /** What started the group: its attempts' tasks carry it, so the team's sandbox rules for that origin apply. */
  origin: TaskOrigin.default("task"),
});
export type AttemptRun = z.infer<typeof AttemptRun>;

/** What the team's object is asked about groups (one RPC, parsed there). */
export const GroupCall = z.discriminatedUnion("op", [
  z.object({ op: z.literal("create"), request: AttemptGroupRequest, machines: z.array(Identifier), who: z.string().max(128) }),
  z.object({ op: z.literal("get"), id: GroupId }),
  z.object({ op: z.literal("list"), scope: z.union([z.literal("*"), z.array(z.string())]), limit: z.number().int().min(1).max(200) }),
  z.object({ op: z.literal("report"), report: AttemptReport }),
  z.object({ op: z.literal("cancel"), id: GroupId, who: z.string().max(128) }),
  z.object({ op: z.literal("pick"), id: GroupId, request: PickRequest, who: z.string().max(128) }),
  z.object({ op: z.literal("discard"), id: GroupId, n: z.number().int().min(1).optional(), who: z.string().max(128) }),
  /** What the team holds as not finished on one machine (its object reconciles them with what it knows). */
  z.object({ op: z.literal("unfinished"), machine: Identifier }),
]);
export type GroupCall = z.infer<typeof GroupCall>;

/** What a machine's object is asked about its attempts (one RPC, parsed there). */
export const MachineAttemptCall = z.discriminatedUnion("op", [
  z.object({ op: z.literal("start"), run: AttemptRun }),
  z.object({ op: z.literal("cancel"), group: GroupId }),
  z.object({ op: z.literal("pick"), group: GroupId, n: z.number().int(), action: z.enum(["merge", "pull-request"]), title: z.string() }),
  z.object({ op: z.literal("discard"), group: GroupId, n: z.number().int() }),
  z.object({ op: z.literal("diff"), group: GroupId, n: z.number().int(), against: z.union([z.literal("base"), z.number().int()]) }),
]);
export type MachineAttemptCall = z.infer<typeof MachineAttemptCall>;

/** The branch of attempt `n`: `agent/<group>-<n>-<agent>`. */
export function attemptBranch(group: string, n: number, agent: string): string {
  return `agent/${group}-${n}-${agent}`;
}

/** What a machine's object answers the team for each call (parsed by the team: they cross an RPC boundary). */
export const AttemptStarted = z.object({ task: z.string(), state: z.string(), startedAtMs: z.number().nullable() });
export const AttemptPicked = z.object({ how: z.string(), commit: z.string().nullable(), url: z.string().nullable() });
export const AttemptDiscarded = z.object({ worktree: z.boolean(), branch: z.boolean(), checkpoints: z.boolean() });
export type MachineAttemptAnswer =
  | z.infer<typeof AttemptStarted>
  | z.infer<typeof AttemptPicked>
  | z.infer<typeof AttemptDiscarded>
  | AttemptDiff
  | { cancelled: number };
/** An attempt the team holds as not finished, as `unfinished` answers it. */
export const UnfinishedAttempt = AttemptKey.extend({ state: AttemptState, task: TaskId.nullable() });
export type UnfinishedAttempt = z.infer<typeof UnfinishedAttempt>;
export const UnfinishedAttempts = z.object({ attempts: z.array(UnfinishedAttempt) });
export type GroupAnswer =
  | AttemptGroup
  | z.infer<typeof UnfinishedAttempts>
  | { groups: AttemptGroup[] }
  | { discarded: (z.infer<typeof AttemptDiscarded> & { n: number })[]; group: AttemptGroup }
  | null;

/** A GitHub trigger's or a schedule's attempts: each delivery or run starts a group of its task's prompt, folder and deadline. */
export const AttemptsTemplate = strictResource("AttemptsTemplate", {
  attempts: z
    .array(AttemptSpec.extend({ machine: Identifier.optional().describe("default: the task's machine") }))
    .min(ATTEMPTS_MIN)
    .max(ATTEMPTS_MAX),
  check: CheckSpec.optional(),
  base: GitRef.optional(),
});
export type AttemptsTemplate = z.infer<typeof AttemptsTemplate>;
