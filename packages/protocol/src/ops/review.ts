/** The tunnel's review operations: a session's changes from its checkpoints, reverting a turn, git, worktrees. */
import { z } from "zod";
import {
  Changes,
  FileDiff,
  GitCommitRequest,
  GitCommitResult,
  GitCwd,
  GitPushRequest,
  GitPushResult,
  GitStatus,
  PullRequestRequest,
  PullRequestResult,
  RelativePath,
  RevertResult,
  WorktreeList,
} from "../review";
import { AgentId } from "../values";
import { IssueRef } from "../tasks";
import { Deleted, MINUTE, type OpDefinition } from "./define";

/** Which session's checkpoints: the agent and its ACP session id name them; `cwd` is the folder the record keeps. */
const SessionRef = z.object({ agent: AgentId, sessionId: z.string().min(1).max(1024), cwd: z.string().min(1).max(4096) });
const Turn = z.number().int().min(1);

/** A push or a pull request talks to a remote: it may take longer than a local command, never forever. */
const REMOTE_MS = 2 * MINUTE;

/** A folder that is not there or not a repository's, and what git itself refused (its message in the detail). */
const GIT_PROBLEMS = ["not_found", "git_failed"] as const;

export const REVIEW_OPS = {
  "checkpoints.changes": { deadlineMs: MINUTE, readOnly: true, problems: GIT_PROBLEMS, args: SessionRef.extend({ turn: Turn.optional() }), result: Changes },
  "checkpoints.diff": {
    deadlineMs: MINUTE,
    readOnly: true,
    problems: GIT_PROBLEMS,
    args: SessionRef.extend({ turn: Turn.optional(), path: RelativePath }),
    result: FileDiff,
  },
  "checkpoints.revert": { deadlineMs: MINUTE, problems: GIT_PROBLEMS, args: SessionRef.extend({ turn: Turn, force: z.boolean() }), result: RevertResult },
  "checkpoints.drop": { deadlineMs: MINUTE, args: SessionRef.pick({ agent: true, sessionId: true }), result: Deleted },
  "git.status": { deadlineMs: MINUTE, readOnly: true, problems: GIT_PROBLEMS, args: z.object({ cwd: GitCwd }), result: GitStatus },
  "git.commit": { deadlineMs: MINUTE, problems: GIT_PROBLEMS, args: GitCommitRequest, result: GitCommitResult },
  "git.push": { deadlineMs: REMOTE_MS, problems: GIT_PROBLEMS, args: GitPushRequest, result: GitPushResult },
  "git.pullRequest": { deadlineMs: REMOTE_MS, problems: GIT_PROBLEMS, args: PullRequestRequest, result: PullRequestResult },
  /** A task started by a GitHub delivery says how it ended on the issue, through the machine's GitHub CLI. */
  "gh.comment": {
    deadlineMs: REMOTE_MS,
    args: IssueRef.extend({ cwd: GitCwd, body: z.string().min(1).max(60_000) }),
    result: z.object({ posted: z.boolean(), url: z.string().nullable(), reason: z.string().nullable() }),
  },
  "worktrees.list": { deadlineMs: MINUTE, readOnly: true, problems: GIT_PROBLEMS, args: z.object({ cwd: GitCwd }), result: WorktreeList },
  "worktrees.remove": {
    deadlineMs: MINUTE,
    problems: [...GIT_PROBLEMS, "permission_denied"],
    args: z.object({ path: GitCwd, force: z.boolean() }),
    result: Deleted,
  },
} as const satisfies Record<string, OpDefinition>;
