/**
 * Git on the machine (docs/architecture.md, "Review and ship"): status, commit, push and pull request in
 * a folder, and the worktrees sessions run in, each done by the machine's own git with its own
 * credentials. The runtime never stores a forge token.
 */
import { createRoute, OpenAPIHono, type RouteHandler } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { relay } from "../http/machine";
import { errors, json, jsonBody, MACHINE_ERRORS, QueryFlag } from "../http/openapi";
import { Deleted } from "@agent-runtime/protocol/ops/define";
import {
  GitCommitRequest,
  GitCommitResult,
  GitCwd,
  GitPushRequest,
  GitPushResult,
  GitStatus,
  PullRequestRequest,
  PullRequestResult,
  WorktreeList,
} from "@agent-runtime/protocol/review";

const GIT_ERRORS = [...MACHINE_ERRORS, "not_found", "git_failed"] as const;

const statusRoute = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/git/status",
      summary: "A repository's state: its top folder, branch, upstream, ahead/behind and changed files",
      request: { query: z.object({ cwd: GitCwd }) },
      responses: { 200: json(GitStatus, "the repository's state"), ...errors(...GIT_ERRORS) },
    },
  ),
);

const commitRoute = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/git/commit",
      summary: "Commit every change of the repository (or only `paths`) with the machine's git identity",
      request: { body: jsonBody(GitCommitRequest) },
      responses: { 201: json(GitCommitResult, "the new commit"), ...errors(...GIT_ERRORS, "unsupported_media_type") },
    },
  ),
);

const pushRoute = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/git/push",
      summary: "Push the current branch with the machine's credentials (never a prompt: a push that needs one fails with git's message)",
      request: { body: jsonBody(GitPushRequest) },
      responses: { 200: json(GitPushResult, "pushed"), ...errors(...GIT_ERRORS, "unsupported_media_type") },
    },
  ),
);

const pullRequestRoute = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/git/pull-request",
      summary: "Open a pull request for the current branch with the machine's GitHub CLI; without it, the page that opens one",
      request: { body: jsonBody(PullRequestRequest) },
      responses: { 200: json(PullRequestResult, "opened, or where to open it and why not"), ...errors(...GIT_ERRORS, "unsupported_media_type") },
    },
  ),
);

const worktreesRoute = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/worktrees",
      summary: "A repository's worktrees: branch, base, ahead/behind and the session using each",
      request: { query: z.object({ cwd: GitCwd.describe("the repository (any folder in it)") }) },
      responses: { 200: json(WorktreeList, "the worktrees"), ...errors(...GIT_ERRORS) },
    },
  ),
);

const removeWorktreeRoute = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "delete",
      path: "/worktrees",
      summary:
        "Remove a worktree a session made (its branch stays); refused with uncommitted changes unless force=true, and for a worktree the runtime did not make (403)",
      request: { query: z.object({ path: GitCwd.describe("the worktree's folder"), force: QueryFlag }) },
      responses: { 200: json(Deleted, "removed, or false when there was none"), ...errors(...GIT_ERRORS, "permission_denied") },
    },
  ),
);

const readStatus: RouteHandler<typeof statusRoute, AppEnv> = async (c) => c.json(await relay(c, "git.status", c.req.valid("query")), 200);
const commit: RouteHandler<typeof commitRoute, AppEnv> = async (c) => c.json(await relay(c, "git.commit", c.req.valid("json")), 201);
const push: RouteHandler<typeof pushRoute, AppEnv> = async (c) => c.json(await relay(c, "git.push", c.req.valid("json")), 200);
const openPullRequest: RouteHandler<typeof pullRequestRoute, AppEnv> = async (c) => c.json(await relay(c, "git.pullRequest", c.req.valid("json")), 200);
const listWorktrees: RouteHandler<typeof worktreesRoute, AppEnv> = async (c) => c.json(await relay(c, "worktrees.list", c.req.valid("query")), 200);
const removeWorktree: RouteHandler<typeof removeWorktreeRoute, AppEnv> = async (c) => {
  const { path, force } = c.req.valid("query");
  return c.json(await relay(c, "worktrees.remove", { path, force: force ?? false }), 200);
};

export const gitRoutes = new OpenAPIHono<AppEnv>()
  .openapi(statusRoute, readStatus)
  .openapi(commitRoute, commit)
  .openapi(pushRoute, push)
  .openapi(pullRequestRoute, openPullRequest)
  .openapi(worktreesRoute, listWorktrees)
  .openapi(removeWorktreeRoute, removeWorktree);
