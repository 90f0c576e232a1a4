/**
 * Attempt groups (docs/architecture.md, "Attempt groups"): one prompt as several attempts (agents ×
 * machines), each a task in its own worktree from one base commit, checked, compared, one picked. The
 * team's object keeps each group; the attempts' machines run them. A member whose scope holds every
 * machine a group names starts and changes it; viewers with that scope read it; a group with a machine
 * outside the caller's scope is as good as absent (404).
 */
import { OpenAPIHono, type RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { machineObject, teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { reachMachine, resolveMachine, scopeAllows } from "../http/access";
import { settled } from "../http/machine";
import { json, jsonBody, MACHINE_ERRORS } from "../http/openapi";
import { ProblemError } from "@agent-runtime/protocol/problems";
import {
  AttemptDiff,
  AttemptGroup,
  AttemptGroupList,
  AttemptGroupRequest,
  DiscardRequest,
  DiscardResult,
  type GroupCall,
  GroupId,
  PickRequest,
} from "@agent-runtime/protocol/attempts";

const IdParams = z.object({ id: GroupId });

/** A group's work is done by its attempts' machines: the problems of reaching them, and of an attempt that is not there. */
const ON_MACHINES = [...MACHINE_ERRORS, "not_found"] as const;

/** Which attempt's diff, and against what. */
const DiffQuery = z.object({
  n: z.coerce.number().int().min(1).max(8),
  against: z
    .union([z.literal("base"), z.coerce.number().int().min(1).max(8)])
    .optional()
    .describe("base (default), or another attempt's number"),
});

const createGroupRoute = apiRoute("post", "/attempts", {
  summary:
    "Start one prompt as 2–8 attempts (agents × machines), each a task in its own worktree on agent/<group>-<n>-<agent> from one base commit, each checked when its turn ends",
  access: { role: "member", machine: false },
  request: { body: jsonBody(AttemptGroupRequest) },
  answers: { 201: json(AttemptGroup, "the group, its attempts queued or running") },
  problems: ["not_found", "conflict", "git_failed", "machine_offline"],
});

const listRoute = apiRoute("get", "/attempts", {
  summary: "The attempt groups whose every machine is in the token's scope, newest first",
  access: { role: "viewer", machine: false },
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(200).optional().describe("groups (default 50)") }) },
  answers: { 200: json(AttemptGroupList, "the groups") },
});

const getRoute = apiRoute("get", "/attempts/{id}", {
  summary: "A group's attempts side by side: state, agent, machine, duration, cost, files changed (+/−), check, branch",
  access: { role: "viewer", machine: false },
  request: { params: IdParams },
  answers: { 200: json(AttemptGroup, "the group") },
  problems: ["not_found"],
});

const diffRoute = apiRoute("get", "/attempts/{id}/diff", {
  summary: "An attempt's branch against the base commit, or against another attempt's branch on the same machine (computed by that machine's git)",
  access: { role: "viewer", machine: false },
  request: { params: IdParams, query: DiffQuery },
  answers: { 200: json(AttemptDiff, "the files and git's unified diff") },
  problems: ON_MACHINES,
});

const pickRoute = apiRoute("post", "/attempts/{id}/pick", {
  summary:
    "Pick an attempt: merge its branch into the base branch (fast-forward or a merge commit; a conflict is refused in git's words), or open a pull request from it",
  access: { role: "member", machine: false },
  request: { params: IdParams, body: jsonBody(PickRequest) },
  answers: { 200: json(AttemptGroup, "the group, with what was picked") },
  problems: [...ON_MACHINES, "git_failed"],
});

const discardRoute = apiRoute("post", "/attempts/{id}/discard", {
  summary: "Discard one attempt, or every attempt not picked: its worktree and branch removed, its checkpoints dropped (each said in the answer)",
  access: { role: "member", machine: false },
  request: { params: IdParams, body: jsonBody(DiscardRequest) },
  answers: { 200: json(DiscardResult, "what was removed, and the group") },
  problems: [...ON_MACHINES, "git_failed"],
});

const cancelRoute = apiRoute("post", "/attempts/{id}/cancel", {
  summary: "Cancel every attempt still going: a queued one never runs, a turn is cancelled, a check is stopped",
  access: { role: "member", machine: false },
  request: { params: IdParams },
  answers: { 200: json(AttemptGroup, "the group, cancelled") },
  problems: ON_MACHINES,
});

/** One call on the team's groups: its answer's problem thrown, its value handed on (each route parses it). */
async function onGroups(c: Context<AppEnv>, call: GroupCall): Promise<unknown> {
  return settled(await teamStub(c.env).groupCall(call));
}

/** A group the caller may see: every machine it names is in the caller's scope (else 404). */
async function visible(c: Context<AppEnv>, id: string): Promise<AttemptGroup> {
  const group = AttemptGroup.parse(await onGroups(c, { op: "get", id }));
  const scope = c.get("identity").machines;
  if (!group.attempts.every((a) => scopeAllows(scope, a.machine))) throw new ProblemError("not_found", `no attempt group '${id}'`);
  return group;
}

const create: RouteHandler<typeof createGroupRoute, AppEnv> = async (c) => {
  const request = c.req.valid("json");
  const fallback = request.attempts.some((a) => a.machine === undefined) ? await resolveMachine(c) : null;
  const machines = request.attempts.map((a) => a.machine ?? fallback!);
  const distinct = [...new Set(machines)];
  // Every machine named must be in the caller's scope; the audit line names the first.
  for (const machine of [...distinct].reverse()) await reachMachine(c, machine, true);
  const group = AttemptGroup.parse(await onGroups(c, { op: "create", request, machines, who: c.get("identity").name }));
  return c.json(group, 201);
};

const list: RouteHandler<typeof listRoute, AppEnv> = async (c) => {
  const { limit = 50 } = c.req.valid("query");
  return c.json(AttemptGroupList.parse(await onGroups(c, { op: "list", scope: c.get("identity").machines, limit })), 200);
};

const get: RouteHandler<typeof getRoute, AppEnv> = async (c) => c.json(await visible(c, c.req.valid("param").id), 200);

const diff: RouteHandler<typeof diffRoute, AppEnv> = async (c) => {
  const group = await visible(c, c.req.valid("param").id);
  const { n, against = "base" } = c.req.valid("query");
  const attempt = group.attempts[n - 1];
  const other = against === "base" ? null : group.attempts[against - 1];
  if (!attempt || (against !== "base" && !other)) throw new ProblemError("not_found", `${group.id} has no attempt ${attempt ? against : n}`);
  if (other && other.machine !== attempt.machine)
    throw new ProblemError(
      "conflict",
      `attempts ${n} and ${against} ran on different machines (${attempt.machine}, ${other.machine}): each machine's git holds only its own branches, so they cannot be diffed against each other there; diff each against the base (GET …/diff?n=${n} and ?n=${against}), the same commit on both`,
    );
  c.set("machine", attempt.machine);
  const answer = await machineObject(c.env, attempt.machine).attemptCall({ op: "diff", group: group.id, n, against });
  return c.json(AttemptDiff.parse(settled(answer)), 200);
};

const pick: RouteHandler<typeof pickRoute, AppEnv> = async (c) => {
  const group = await visible(c, c.req.valid("param").id);
  const request = c.req.valid("json");
  c.set("machine", group.attempts[request.n - 1]?.machine ?? group.attempts[0]!.machine);
  return c.json(AttemptGroup.parse(await onGroups(c, { op: "pick", id: group.id, request, who: c.get("identity").name })), 200);
};

const discard: RouteHandler<typeof discardRoute, AppEnv> = async (c) => {
  const group = await visible(c, c.req.valid("param").id);
  const { n } = c.req.valid("json");
  c.set("machine", group.attempts[(n ?? 1) - 1]?.machine ?? group.attempts[0]!.machine);
  const call: GroupCall = { op: "discard", id: group.id, who: c.get("identity").name, ...(n !== undefined ? { n } : {}) };
  return c.json(DiscardResult.parse(await onGroups(c, call)), 200);
};

const cancel: RouteHandler<typeof cancelRoute, AppEnv> = async (c) => {
  const group = await visible(c, c.req.valid("param").id);
  c.set("machine", group.attempts[0]!.machine);
  return c.json(AttemptGroup.parse(await onGroups(c, { op: "cancel", id: group.id, who: c.get("identity").name })), 200);
};

export const attemptRoutes = new OpenAPIHono<AppEnv>()
  .openapi(createGroupRoute, create)
  .openapi(listRoute, list)
  .openapi(getRoute, get)
  .openapi(diffRoute, diff)
  .openapi(pickRoute, pick)
  .openapi(discardRoute, discard)
  .openapi(cancelRoute, cancel);
