/**
 * Schedules (docs/architecture.md, "Schedules"): a task started at the times a cron expression names.
 * The team's object keeps them and fires them with its one alarm; a schedule belongs to the machine its
 * task runs on, so a token sees and changes only those of the machines in its scope.
 */
import { OpenAPIHono, type RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { inTaskScope, reachMachine, reachTaskMachines, scopeAllows } from "../http/access";
import { settled } from "../http/machine";
import { json, jsonBody } from "../http/openapi";
import { Schedule, ScheduleId, ScheduleList, SchedulePatch, ScheduleRequest } from "@agent-runtime/protocol/schedules";

const IdParams = z.object({ id: ScheduleId });

const createScheduleRoute = apiRoute("post", "/schedules", {
  summary: "Start a task at the times a cron expression names, in a time zone (its task's machine must be in the token's scope)",
  access: { role: "member", machine: false },
  request: { body: jsonBody(ScheduleRequest) },
  answers: { 201: json(Schedule, "the schedule, with its next run") },
  problems: ["not_found", "conflict"],
});

const listRoute = apiRoute("get", "/schedules", {
  summary: "The schedules of the machines in the token's scope, with their next and last runs",
  access: { role: "viewer", machine: false },
  answers: { 200: json(ScheduleList, "the schedules") },
});

const getRoute = apiRoute("get", "/schedules/{id}", {
  summary: "A schedule, its next run and its last runs (each the task it started, or why it skipped)",
  access: { role: "viewer", machine: false },
  request: { params: IdParams },
  answers: { 200: json(Schedule, "the schedule") },
  problems: ["not_found"],
});

const patchRoute = apiRoute("patch", "/schedules/{id}", {
  summary: "Pause or resume a schedule (resumed, it runs next at its next time from now)",
  access: { role: "member", machine: false },
  request: { params: IdParams, body: jsonBody(SchedulePatch) },
  answers: { 200: json(Schedule, "the schedule") },
  problems: ["not_found"],
});

const deleteRoute = apiRoute("delete", "/schedules/{id}", {
  summary: "Delete a schedule (tasks it started stay)",
  access: { role: "member", machine: false },
  request: { params: IdParams },
  answers: { 204: { description: "deleted" } },
  problems: ["not_found"],
});

/** A schedule the caller may see (one of another machine is as good as absent: 404). */
async function visible(c: Context<AppEnv>, id: string): Promise<Schedule> {
  // The team's answer crosses an object's boundary: parsed, not trusted by its type.
  return inTaskScope(c, Schedule.nullable().parse(await teamStub(c.env).getSchedule(id)), `no schedule '${id}'`);
}

const create: RouteHandler<typeof createScheduleRoute, AppEnv> = async (c) => {
  const request = c.req.valid("json");
  await reachTaskMachines(c, request);
  return c.json(Schedule.parse(settled(await teamStub(c.env).createSchedule(request, c.get("identity").name))), 201);
};

const list: RouteHandler<typeof listRoute, AppEnv> = async (c) => {
  const scope = c.get("identity").machines;
  const schedules = ScheduleList.shape.schedules.parse(await teamStub(c.env).listSchedules()).filter((s) => scopeAllows(scope, s.task.machine));
  return c.json({ schedules }, 200);
};

const get: RouteHandler<typeof getRoute, AppEnv> = async (c) => c.json(await visible(c, c.req.valid("param").id), 200);

const patch: RouteHandler<typeof patchRoute, AppEnv> = async (c) => {
  const schedule = await visible(c, c.req.valid("param").id);
  await reachMachine(c, schedule.task.machine);
  return c.json(Schedule.parse(settled(await teamStub(c.env).pauseSchedule(schedule.id, c.req.valid("json").paused))), 200);
};

const remove: RouteHandler<typeof deleteRoute, AppEnv> = async (c) => {
  const schedule = await visible(c, c.req.valid("param").id);
  await reachMachine(c, schedule.task.machine);
  await teamStub(c.env).deleteSchedule(schedule.id);
  return c.body(null, 204);
};

export const scheduleRoutes = new OpenAPIHono<AppEnv>()
  .openapi(createScheduleRoute, create)
  .openapi(listRoute, list)
  .openapi(getRoute, get)
  .openapi(patchRoute, patch)
  .openapi(deleteRoute, remove);
