/**
 * The routes of a record the team keeps for its task's machine (a schedule, a GitHub trigger), declared
 * once (docs/architecture.md, "Families of routes"): create, list, get and delete.
 * Creating one takes a member whose scope holds every machine it starts tasks on; a record whose task's
 * machine is outside the caller's scope is as good as absent (404, and left out of a list); deleting one
 * takes a member of that machine. The declarations go through `apiRoute` (http/api-route.ts) as every
 * route's; what a kind adds (pausing a schedule, a trigger's deliveries) its own file declares beside.
 */
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { teamStub } from "../durable/stubs";
import type { TaskRecordKind, TeamObject } from "../durable/team/team";
import type { CallOutcome } from "../durable/machine/machine";
import type { AppEnv } from "../env";
import { inTaskScope, reachMachine, reachTaskMachines, type StartsTasks, scopeAllows } from "./access";
import { apiRoute } from "./api-route";
import { settled } from "./machine";
import { json, jsonBody } from "./openapi";

type TaskRecord = StartsTasks & { id: string };

export interface TaskRecordSpec<R extends TaskRecord, Req extends StartsTasks, V> {
  /** The collection: its path under /v1, its list's key, and what the team's methods are asked for. */
  kind: TaskRecordKind;
  /** A record's id, the record as the team answers it, the body that creates one, and the list. */
  schemas: { id: z.ZodType<string>; record: z.ZodType<R>; request: z.ZodType<Req>; list: z.ZodType };
  /** What the team is asked to create one (it counts what each machine may have: 409 past that). */
  create: (team: DurableObjectStub<TeamObject>, request: Req, who: string) => Promise<CallOutcome<unknown>>;
  /** A record as the routes answer with it, where that is more than the record (a trigger's whole URL). */
  shown?: { schema: z.ZodType<V>; of: (c: Context<AppEnv>, record: R) => V };
  summaries: { create: string; list: string; get: string; delete: string };
  /** What the answer to a creation is, in its description. */
  created: string;
}

export interface TaskRecordRoutes<R> {
  routes: OpenAPIHono<AppEnv>;
  /** The record of that id the caller may see (else 404), as the team answered it. */
  visible(c: Context<AppEnv>, id: string): Promise<R>;
}

export function taskRecordRoutes<R extends TaskRecord, Req extends StartsTasks, V = R>(spec: TaskRecordSpec<R, Req, V>): TaskRecordRoutes<R> {
  const { kind, schemas, summaries } = spec;
  const noun = kind.slice(0, -1);
  const shown = spec.shown ?? { schema: schemas.record, of: (_c: Context<AppEnv>, record: R) => record };
  const IdParams = z.object({ id: schemas.id });
  const member = { role: "member", machine: false } as const;
  const viewer = { role: "viewer", machine: false } as const;

  const create: RouteConfig = apiRoute("post", `/${kind}`, {
    summary: summaries.create,
    access: member,
    request: { body: jsonBody(schemas.request) },
    answers: { 201: json(shown.schema, spec.created) },
    problems: ["not_found", "conflict"],
  });
  const list: RouteConfig = apiRoute("get", `/${kind}`, { summary: summaries.list, access: viewer, answers: { 200: json(schemas.list, `the ${kind}`) } });
  const get: RouteConfig = apiRoute("get", `/${kind}/{id}`, {
    summary: summaries.get,
    access: viewer,
    request: { params: IdParams },
    answers: { 200: json(shown.schema, `the ${noun}`) },
    problems: ["not_found"],
  });
  const remove: RouteConfig = apiRoute("delete", `/${kind}/{id}`, {
    summary: summaries.delete,
    access: member,
    request: { params: IdParams },
    answers: { 204: { description: "deleted" } },
    problems: ["not_found"],
  });

  async function visible(c: Context<AppEnv>, id: string): Promise<R> {
    // The team's answer crosses an object's boundary: parsed, not trusted by its type.
    return inTaskScope(c, schemas.record.nullable().parse(await teamStub(c.env).getTaskRecord(kind, id)), `no ${noun} '${id}'`);
  }

  // The routes are built for any kind, so their declared answers are not tied to the handlers' types:
  // what each handler answers is the spec's typed `shown.of`, and the list's outer shape is parsed.
  type Create = { out: { json: Req } };
  type ById = { out: { param: { id: string } } };
  const routes = new OpenAPIHono<AppEnv>()
    .openapi<RouteConfig, Create>(create, async function createRecord(c) {
      const request = c.req.valid("json");
      await reachTaskMachines(c, request);
      const created = schemas.record.parse(settled(await spec.create(teamStub(c.env), request, c.get("identity").name)));
      return c.json(shown.of(c, created), 201);
    })
    .openapi(list, async function listRecords(c) {
      const scope = c.get("identity").machines;
      const records = schemas.record.array().parse(await teamStub(c.env).listTaskRecords(kind));
      return c.json(schemas.list.parse({ [kind]: records.filter((r) => scopeAllows(scope, r.task.machine)).map((r) => shown.of(c, r)) }), 200);
    })
    .openapi<RouteConfig, ById>(get, async function getRecord(c) {
      return c.json(shown.of(c, await visible(c, c.req.valid("param").id)), 200);
    })
    .openapi<RouteConfig, ById>(remove, async function deleteRecord(c) {
      const record = await visible(c, c.req.valid("param").id);
      await reachMachine(c, record.task.machine);
      await teamStub(c.env).deleteTaskRecord(kind, record.id);
      return c.body(null, 204);
    });
  return { routes, visible };
}
