/**
 * A session's changes (docs/architecture.md, "Review and ship"): what its turns changed in its folder,
 * read from the checkpoints the machine keeps, one file's diff, and a turn's revert. Nothing here is
 * stored by the worker: each answer is read from the machine when asked (the record keeps only each
 * turn's summary).
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env";
import { relay } from "../http/machine";
import { relayRoute, withRelayRoutes } from "../http/relay-route";
import { machineObject } from "../durable/stubs";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { RelativePath, RevertRequest } from "@agent-runtime/protocol/review";
import { machineOfSession, type Session, SessionId } from "@agent-runtime/protocol/sessions";

const IdParams = z.object({ id: SessionId });
const TurnQuery = z.coerce.number().int().min(1).optional().describe("one turn's (numbered from 1 in the order they started); default the whole session");

/** Which checkpoints a session's changes are read from: its record's agent, ACP id and folder name them on the machine. */
async function checkpointsOf(c: Context<AppEnv>, id: string): Promise<Pick<Session, "agent" | "sessionId" | "cwd">> {
  const record = await machineObject(c.env, machineOfSession(id)).getSession(id);
  if (!record) throw new ProblemError("not_found", `no session '${id}'`);
  return { agent: record.agent, sessionId: record.sessionId, cwd: record.cwd };
}

/** Forget a session's checkpoints on its machine (its record was purged); a machine away forgets them after the retention. */
export async function dropCheckpoints(c: Context<AppEnv>, record: Session): Promise<void> {
  await relay(c, "checkpoints.drop", { agent: record.agent, sessionId: record.sessionId }).catch((err: unknown) => {
    if (!(err instanceof ProblemError && err.code === "machine_offline")) throw err;
  });
}

export const changeRoutes = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
  relayRoute("get", "/sessions/{id}/changes", {
    summary: "What the session changed in its folder: from its first checkpoint to now, or one turn's; per file its status and line counts",
    access: { role: "viewer", machine: "session" },
    op: "checkpoints.changes",
    params: IdParams,
    query: z.object({ turn: TurnQuery }),
    args: async ({ param: { id }, query: { turn } }, c) => ({ ...(await checkpointsOf(c, id)), ...(turn ? { turn } : {}) }),
    answer: { status: 200, description: "the changed files and their totals" },
  }),
  relayRoute("get", "/sessions/{id}/changes/diff", {
    summary: "One changed file's unified diff (bounded: a larger one says so and offers the file instead), read from the machine",
    access: { role: "viewer", machine: "session" },
    op: "checkpoints.diff",
    params: IdParams,
    query: z.object({ path: RelativePath.describe("relative to the session's folder"), turn: TurnQuery }),
    args: async ({ param: { id }, query: { path, turn } }, c) => ({ ...(await checkpointsOf(c, id)), path, ...(turn ? { turn } : {}) }),
    answer: { status: 200, description: "the file's diff" },
  }),
  relayRoute("post", "/sessions/{id}/revert", {
    summary: "Put the files a turn changed back as they were before it (409 naming the files changed since, unless force)",
    access: { role: "member", machine: "session" },
    op: "checkpoints.revert",
    params: IdParams,
    body: RevertRequest,
    args: async ({ param: { id }, json: { turn, force } }, c) => ({ ...(await checkpointsOf(c, id)), turn, force: force ?? false }),
    answer: { status: 200, description: "what was put back" },
  }),
]);
