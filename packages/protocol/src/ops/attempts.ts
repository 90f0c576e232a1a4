/**
 * The tunnel's attempt operations (docs/architecture.md, "Attempt groups"): the base agreed, an attempt's
 * work committed on its branch and counted, its check run (and stopped), two branches diffed, a branch
 * merged into the base, an attempt's worktree and branch removed. All run the machine's own git.
 */
import { z } from "zod";
import { AttemptChanges, AttemptDiffFile, CheckResult, GitRef } from "../attempts";
import { GitCwd } from "../review";
import { SandboxSpec } from "../sandbox";
import { MINUTE, type OpDefinition } from "./define";

const Commit = z.string().regex(/^[0-9a-f]{40}$/);

export const ATTEMPT_OPS = {
  /** What `base` (default: the current branch) names in the folder's repository; with `commit`, that this machine holds it. */
  "attempts.base": {
    deadlineMs: MINUTE,
    readOnly: true,
    args: z.object({ cwd: GitCwd, base: GitRef.optional(), commit: Commit.optional() }),
    result: z.object({ repository: z.string(), branch: z.string().nullable(), commit: Commit }),
  },
  /** Commit what the attempt's agent left in its worktree on its branch, and count the branch against the base. */
  "attempts.settle": {
    deadlineMs: 2 * MINUTE,
    args: z.object({ cwd: GitCwd, base: Commit, message: z.string().min(1).max(4000) }),
    result: z.object({ commit: Commit.nullable(), changes: AttemptChanges }),
  },
  /**
   * Run the check in the worktree (`sh -c`), its process group ended past `timeoutMs`; enclosed as the
   * attempt's agent was (`sandbox`: what the team asked for it; the sidecar applies the stricter of it and
   * its owner's floor). A check of the same `key` still running (its answer lost) is ended first.
   */
  "attempts.check": {
    deadlineMs: 24 * 60 * MINUTE + MINUTE,
    args: z.object({
      cwd: GitCwd,
      command: z.string().min(1).max(4000),
      timeoutMs: z.number().int().min(1000),
      key: z.string().min(1).max(128),
      sandbox: SandboxSpec.optional(),
    }),
    result: CheckResult,
  },
  "attempts.stopCheck": { deadlineMs: MINUTE, args: z.object({ key: z.string().min(1).max(128) }), result: z.object({ stopped: z.boolean() }) },
  "attempts.diff": {
    deadlineMs: MINUTE,
    readOnly: true,
    args: z.object({ cwd: GitCwd, from: GitRef, to: GitRef }),
    result: z.object({ files: z.array(AttemptDiffFile), diff: z.string(), truncated: z.boolean() }),
  },
  /** Merge `branch` into `into` (fast-forward when it can, else a merge commit); a conflict is refused in git's words, nothing left half-merged. */
  "attempts.merge": {
    deadlineMs: 2 * MINUTE,
    args: z.object({ cwd: GitCwd, branch: GitRef, into: GitRef, message: z.string().min(1).max(4000) }),
    result: z.object({ how: z.enum(["fast-forward", "merge commit"]), commit: Commit }),
  },
  /** Remove an attempt's worktree (forced: its work is being thrown away on request) and delete its branch. */
  "attempts.discard": {
    deadlineMs: MINUTE,
    args: z.object({ cwd: GitCwd, path: z.string().min(1).max(4096).nullable(), branch: GitRef }),
    result: z.object({ worktree: z.boolean(), branch: z.boolean() }),
  },
} as const satisfies Record<string, OpDefinition>;
