/**
 * Tasks (docs/architecture.md, "Tasks"): sessions the runtime starts and drives itself, one prompt to
 * its end, queued while their machine is away. Each machine's object keeps its own; a list asks the
 * machines in the caller's scope that have records, a bounded number at a time, as sessions do.
 */
import { OpenAPIHono, type RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { machineObject } from "../durable/stubs";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { machinesToList } from "../http/access";
import { PAGE_LIMIT, pageAcross, pageQuery, readCursor } from "../http/paging";
import { settled } from "../http/machine";
import { json, jsonBody, MACHINE_ERRORS } from "../http/openapi";
import { Task, type TaskCall, TaskFilter, TaskId, TaskList, TaskPage, TaskRequest, machineOfTask } from "@agent-runtime/protocol/tasks";

const IdParams = z.object({ id: TaskId });

const submitRoute = apiRoute("post", "/tasks", {
  summary: "Start a task: a session the runtime drives to the end of one prompt (queued while the machine is away or busy)",
  access: { role: "member", machine: "body" },
  request: { body: jsonBody(TaskRequest) },
  answers: { 201: json(Task, "the task, queued or running") },
  problems: ["too_many_tasks"],
});

const listRoute = apiRoute("get", "/tasks", {
  summary: "Tasks on every machine in the token's scope, newest first, a page at a time",
  access: { role: "viewer", machine: false },
  request: { query: TaskFilter.extend(pageQuery("tasks", "task").shape) },
  answers: { 200: json(TaskList, "a page of tasks") },
  problems: ["not_found"],
});

const getRoute = apiRoute("get", "/tasks/{id}", {
  summary: "A task: its state, its session and, once it ended, its result (stop reason, last message, changes, branch)",
  access: { role: "viewer", machine: "task" },
  request: { params: IdParams },
  answers: { 200: json(Task, "the task") },
  problems: MACHINE_ERRORS,
});

const cancelRoute = apiRoute("post", "/tasks/{id}/cancel", {
  summary: "Cancel a task: a queued one never runs; a running one's turn is cancelled (an ended one is answered as it is)",
  access: { role: "member", machine: "task" },
  request: { params: IdParams },
  answers: { 200: json(Task, "the task, cancelled") },
  problems: MACHINE_ERRORS,
});

/** One call on a machine's tasks, its answer parsed by `schema`. */
async function onTasks<T>(c: Context<AppEnv>, machine: string, call: TaskCall, schema: z.ZodType<T>): Promise<T> {
  return schema.parse(settled(await machineObject(c.env, machine).taskCall(call)));
}

const submit: RouteHandler<typeof submitRoute, AppEnv> = async (c) => {
  const task = await onTasks(
    c,
    c.get("machine")!,
    { op: "submit", request: c.req.valid("json"), machine: c.get("machine")!, who: c.get("identity").name, origin: "task" },
    Task,
  );
  return c.json(task, 201);
};

const list: RouteHandler<typeof listRoute, AppEnv> = async (c) => {
  const { machine: named, limit = PAGE_LIMIT, cursor: after, ...filter } = c.req.valid("query");
  const machines = await machinesToList(c, named ?? c.req.param("machine"));
  const before = readCursor(after);
  const ask = (m: string) => onTasks(c, m, { op: "list", filter, before, limit }, TaskPage);
  const page = await pageAcross(machines, limit, { ask, itemsOf: (p) => p.tasks, at: (t) => t.createdAtMs });
  return c.json({ tasks: page.items, nextCursor: page.nextCursor }, 200);
};

const get: RouteHandler<typeof getRoute, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  return c.json(await onTasks(c, machineOfTask(id), { op: "get", id }, Task), 200);
};

const cancel: RouteHandler<typeof cancelRoute, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  return c.json(await onTasks(c, machineOfTask(id), { op: "cancel", id, who: c.get("identity").name }, Task), 200);
};

export const taskRoutes = new OpenAPIHono<AppEnv>().openapi(submitRoute, submit).openapi(listRoute, list).openapi(getRoute, get).openapi(cancelRoute, cancel);
