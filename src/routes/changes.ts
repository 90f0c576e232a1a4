/**
 * A session's changes (docs/architecture.md, "Review and ship"): what its turns changed in its folder,
 * read from the checkpoints the machine keeps, one file's diff, and a turn's revert. Nothing here is
 * stored by the worker: each answer is read from the machine when asked (the record keeps only each
 * turn's summary).
 */
import { createRoute, OpenAPIHono, type RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { relay } from "../http/machine";
import { errors, json, jsonBody, MACHINE_ERRORS } from "../http/openapi";
import { machineObject } from "../durable/stubs";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { Changes, FileDiff, RelativePath, RevertRequest, RevertResult } from "@agent-runtime/protocol/review";
import { machineOfSession, type Session, SessionId } from "@agent-runtime/protocol/sessions";

const IdParams = z.object({ id: SessionId });
const TurnQuery = z.coerce.number().int().min(1).optional().describe("one turn's (numbered from 1 in the order they started); default the whole session");

const changesRoute = createRoute(
  declare(
    { role: "viewer", machine: "session" },
    {
      method: "get",
      path: "/sessions/{id}/changes",
      summary: "What the session changed in its folder: from its first checkpoint to now, or one turn's; per file its status and line counts",
      request: { params: IdParams, query: z.object({ turn: TurnQuery }) },
      responses: { 200: json(Changes, "the changed files and their totals"), ...errors(...MACHINE_ERRORS, "not_found", "git_failed") },
    },
  ),
);

const diffRoute = createRoute(
  declare(
    { role: "viewer", machine: "session" },
    {
      method: "get",
      path: "/sessions/{id}/changes/diff",
      summary: "One changed file's unified diff (bounded: a larger one says so and offers the file instead), read from the machine",
      request: { params: IdParams, query: z.object({ path: RelativePath.describe("relative to the session's folder"), turn: TurnQuery }) },
      responses: { 200: json(FileDiff, "the file's diff"), ...errors(...MACHINE_ERRORS, "not_found", "git_failed") },
    },
  ),
);

const revertRoute = createRoute(
  declare(
    { role: "member", machine: "session" },
    {
      method: "post",
      path: "/sessions/{id}/revert",
      summary: "Put the files a turn changed back as they were before it (409 naming the files changed since, unless force)",
      request: { params: IdParams, body: jsonBody(RevertRequest) },
      responses: { 200: json(RevertResult, "what was put back"), ...errors(...MACHINE_ERRORS, "not_found", "git_failed", "unsupported_media_type") },
    },
  ),
);

/** The record a session's changes are read for: its agent, its ACP id and its folder name its checkpoints on the machine. */
async function recordOf(c: Context<AppEnv>, id: string): Promise<Session> {
  const record = await machineObject(c.env, machineOfSession(id)).getSession(id);
  if (!record) throw new ProblemError("not_found", `no session '${id}'`);
  return record;
}

const readChanges: RouteHandler<typeof changesRoute, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  const { turn } = c.req.valid("query");
  const { agent, sessionId, cwd } = await recordOf(c, id);
  return c.json(await relay(c, "checkpoints.changes", { agent, sessionId, cwd, ...(turn ? { turn } : {}) }), 200);
};

const readDiff: RouteHandler<typeof diffRoute, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  const { path, turn } = c.req.valid("query");
  const { agent, sessionId, cwd } = await recordOf(c, id);
  return c.json(await relay(c, "checkpoints.diff", { agent, sessionId, cwd, path, ...(turn ? { turn } : {}) }), 200);
};

const revertTurn: RouteHandler<typeof revertRoute, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  const { turn, force } = c.req.valid("json");
  const { agent, sessionId, cwd } = await recordOf(c, id);
  return c.json(await relay(c, "checkpoints.revert", { agent, sessionId, cwd, turn, force: force ?? false }), 200);
};

/** Forget a session's checkpoints on its machine (its record was purged); a machine away forgets them after the retention. */
export async function dropCheckpoints(c: Context<AppEnv>, record: Session): Promise<void> {
  await relay(c, "checkpoints.drop", { agent: record.agent, sessionId: record.sessionId }).catch((err: unknown) => {
    if (!(err instanceof ProblemError && err.code === "machine_offline")) throw err;
  });
}

export const changeRoutes = new OpenAPIHono<AppEnv>().openapi(changesRoute, readChanges).openapi(diffRoute, readDiff).openapi(revertRoute, revertTurn);
