/**
 * Schedules (docs/architecture.md, "Schedules"): a task started at the times a cron expression names.
 * The team's object keeps them and fires them with its one alarm; a schedule belongs to the machine its
 * task runs on, so a token sees and changes only those of the machines in its scope (http/task-records.ts).
 */
import type { RouteHandler } from "@hono/zod-openapi";
import { z } from "zod";
import { teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { reachMachine } from "../http/access";
import { settled } from "../http/machine";
import { json, jsonBody } from "../http/openapi";
import { taskRecordRoutes } from "../http/task-records";
import { Schedule, ScheduleId, ScheduleList, SchedulePatch, ScheduleRequest } from "@agent-runtime/protocol/schedules";

const schedules = taskRecordRoutes({
  kind: "schedules",
  schemas: { id: ScheduleId, record: Schedule, request: ScheduleRequest, list: ScheduleList },
  create: (team, request, who) => team.createSchedule(request, who),
  created: "the schedule, with its next run",
  summaries: {
    create: "Start a task at the times a cron expression names, in a time zone (its task's machine must be in the token's scope)",
    list: "The schedules of the machines in the token's scope, with their next and last runs",
    get: "A schedule, its next run and its last runs (each the task it started, or why it skipped)",
    delete: "Delete a schedule (tasks it started stay)",
  },
});

const patchRoute = apiRoute("patch", "/schedules/{id}", {
  summary: "Pause or resume a schedule (resumed, it runs next at its next time from now)",
  access: { role: "member", machine: false },
  request: { params: z.object({ id: ScheduleId }), body: jsonBody(SchedulePatch) },
  answers: { 200: json(Schedule, "the schedule") },
  problems: ["not_found"],
});

const patch: RouteHandler<typeof patchRoute, AppEnv> = async (c) => {
  const schedule = await schedules.visible(c, c.req.valid("param").id);
  await reachMachine(c, schedule.task.machine);
  return c.json(Schedule.parse(settled(await teamStub(c.env).pauseSchedule(schedule.id, c.req.valid("json").paused))), 200);
};

export const scheduleRoutes = schedules.routes.openapi(patchRoute, patch);
