/** The review operations of the tunnel (packages/protocol/src/ops/review.ts), over checkpoints, git and worktrees. */
import type { OpHandlers } from "../tunnel";
import type { Checkpoints } from "./checkpoints";
import { gitCommit, gitPush, gitStatus, pullRequest } from "./git-actions";
import { commentOnIssue } from "./gh";
import type { Worktrees } from "./worktrees";

type ReviewOp = Extract<keyof OpHandlers, `checkpoints.${string}` | `git.${string}` | `worktrees.${string}` | "gh.comment">;

export function reviewHandlers(checkpoints: Checkpoints, worktrees: Worktrees, resolvePath: (path: string) => string): Pick<OpHandlers, ReviewOp> {
  return {
    "checkpoints.changes": ({ agent, sessionId, cwd, turn }) => checkpoints.changes({ agent, sessionId }, cwd, turn),
    "checkpoints.diff": ({ agent, sessionId, cwd, turn, path }) => checkpoints.diff({ agent, sessionId }, cwd, path, turn),
    "checkpoints.revert": ({ agent, sessionId, cwd, turn, force }) => checkpoints.revert({ agent, sessionId }, cwd, turn, force),
    "checkpoints.drop": async ({ agent, sessionId }) => ({ deleted: await checkpoints.drop({ agent, sessionId }) }),
    "git.status": ({ cwd }) => gitStatus(resolvePath(cwd)),
    "git.commit": (request) => gitCommit({ ...request, cwd: resolvePath(request.cwd) }),
    "git.push": (request) => gitPush({ ...request, cwd: resolvePath(request.cwd) }),
    "git.pullRequest": (request) => pullRequest({ ...request, cwd: resolvePath(request.cwd) }),
    "gh.comment": (request) => commentOnIssue({ ...request, cwd: resolvePath(request.cwd) }),
    "worktrees.list": ({ cwd }) => worktrees.list(resolvePath(cwd)),
    "worktrees.remove": async ({ path, force }) => ({ deleted: await worktrees.remove(resolvePath(path), force) }),
  };
}
