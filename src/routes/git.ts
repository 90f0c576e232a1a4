/**
 * Git on the machine (docs/architecture.md, "Review and ship"): status, commit, push and pull request in
 * a folder, and the worktrees sessions run in, each done by the machine's own git with its own
 * credentials. The runtime never stores a forge token.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { QueryFlag } from "../http/openapi";
import { relayRoute, withRelayRoutes } from "../http/relay-route";
import { GitCommitRequest, GitCwd, GitPushRequest, PullRequestRequest } from "@agent-runtime/protocol/review";

export const gitRoutes = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
  relayRoute("get", "/git/status", {
    summary: "A repository's state: its top folder, branch, upstream, ahead/behind and changed files",
    access: { role: "viewer", machine: true },
    op: "git.status",
    query: z.object({ cwd: GitCwd }),
    answer: { status: 200, description: "the repository's state" },
  }),
  relayRoute("post", "/git/commit", {
    summary: "Commit every change of the repository (or only `paths`) with the machine's git identity",
    access: { role: "member", machine: true },
    op: "git.commit",
    body: GitCommitRequest,
    answer: { status: 201, description: "the new commit" },
  }),
  relayRoute("post", "/git/push", {
    summary: "Push the current branch with the machine's credentials (never a prompt: a push that needs one fails with git's message)",
    access: { role: "member", machine: true },
    op: "git.push",
    body: GitPushRequest,
    answer: { status: 200, description: "pushed" },
  }),
  relayRoute("post", "/git/pull-request", {
    summary: "Open a pull request for the current branch with the machine's GitHub CLI; without it, the page that opens one",
    access: { role: "member", machine: true },
    op: "git.pullRequest",
    body: PullRequestRequest,
    answer: { status: 200, description: "opened, or where to open it and why not" },
  }),
  relayRoute("get", "/worktrees", {
    summary: "A repository's worktrees: branch, base, ahead/behind and the session using each",
    access: { role: "viewer", machine: true },
    op: "worktrees.list",
    query: z.object({ cwd: GitCwd.describe("the repository (any folder in it)") }),
    answer: { status: 200, description: "the worktrees" },
  }),
  relayRoute("delete", "/worktrees", {
    summary:
      "Remove a worktree a session made (its branch stays); refused with uncommitted changes unless force=true, and for a worktree the runtime did not make (403)",
    access: { role: "member", machine: true },
    op: "worktrees.remove",
    query: z.object({ path: GitCwd.describe("the worktree's folder"), force: QueryFlag }),
    args: ({ query: { path, force } }) => ({ path, force: force ?? false }),
    answer: { status: 200, description: "removed, or false when there was none" },
  }),
]);
