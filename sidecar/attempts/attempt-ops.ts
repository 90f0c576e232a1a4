/** The attempt operations of the tunnel (packages/protocol/src/ops/attempts.ts): git of attempt groups and their checks. */
import { existsSync } from "node:fs";
import type { OpHandlers } from "../tunnel";
import type { Worktrees } from "../review/worktrees";
import { deleteBranch, diffRefs, mergeInto, resolveBase, settle } from "./attempt-git";
import type { Checks } from "./checks";

type AttemptOp = Extract<keyof OpHandlers, `attempts.${string}`>;

export function attemptHandlers(checks: Checks, worktrees: Worktrees, scratchRoot: string, resolvePath: (path: string) => string): Pick<OpHandlers, AttemptOp> {
  return {
    "attempts.base": ({ cwd, base, commit }) => resolveBase({ cwd: resolvePath(cwd), base, commit }),
    "attempts.settle": (request) => settle({ ...request, cwd: resolvePath(request.cwd) }),
    "attempts.check": (request) => checks.run({ ...request, cwd: resolvePath(request.cwd) }),
    "attempts.stopCheck": async ({ key }) => ({ stopped: checks.stop(key) }),
    "attempts.diff": (request) => diffRefs({ ...request, cwd: resolvePath(request.cwd) }),
    "attempts.merge": (request) => mergeInto({ ...request, cwd: resolvePath(request.cwd) }, scratchRoot),
    "attempts.discard": async ({ cwd, path, branch }) => {
      // The worktree first: git will not delete a branch a worktree has checked out.
      const worktree = path !== null && existsSync(path) ? await worktrees.remove(path, true) : false;
      return { worktree, branch: await deleteBranch(resolvePath(cwd), branch) };
    },
  };
}
