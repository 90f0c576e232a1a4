/**
 * `GET /v1/sessions/events`: what changes in the sessions list, live (docs/architecture.md, "Sessions"). Each
 * machine in the caller's scope that has sessions or is connected is watched in its own object (`watchSessions`), and their
 * streams are merged here: the dashboard's waiting count follows a question within moments of it being asked,
 * on any device, with or without notifications. A change says which session and its state; the list itself
 * is read from `GET /v1/sessions`.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { machinesToList } from "../http/access";
import { callerOf } from "../http/machine";
import { mergeSse } from "../http/sse-merge";
import { machineObject, teamStub } from "../durable/stubs";
import { SSE_HEADERS } from "../durable/streams/sse-body";

/** Machines watched by one stream; a scope with more has the rest in the list it reads (the dashboard's poll). */
export const MAX_WATCHED_MACHINES = 20;

const events = apiRoute("get", "/sessions/events", {
  summary: "Changes to the sessions of the machines in the token's scope, live (text/event-stream)",
  description: `\`event: session\` with \`{id, machine, state}\` when a session's state or queue changes, \`event: machine\` with \`{machine}\` when it comes or goes (and once per machine when the stream opens), \`event: ports\` with \`{machine}\` when what listens on it changes (read it with \`GET /v1/ports\`). Machines watched: those with sessions and those connected when it opens. The stream ends after a quiet while (or when a watched machine's object restarts): open it again, which also watches a machine that got its first session since. At most ${MAX_WATCHED_MACHINES} machines (the first by name); the rest show in the list as it is read.`,
  access: { role: "viewer", machine: false },
  answers: { 200: { description: "an SSE stream of changes", content: { "text/event-stream": { schema: z.string() } } } },
  problems: ["invalid_request", "not_found"],
});

export const sessionEventRoutes = new OpenAPIHono<AppEnv>().openapi(events, async function followSessionChanges(c) {
  const named = c.req.param("machine");
  // Each machine with sessions and each connected one: its presence and its ports are followed here too.
  const machines = (named === undefined ? await teamStub(c.env).machinesToWatch(c.get("identity").machines) : await machinesToList(c, named)).slice(
    0,
    MAX_WATCHED_MACHINES,
  );
  const caller = callerOf(c);
  const watches = await Promise.all(machines.map((machine) => machineObject(c.env, machine).watchSessions(caller)));
  const sources = watches.flatMap((res) => (res.ok && res.body ? [res.body] : []));
  // With nothing to watch, the reader is told to come back later rather than held by an empty stream.
  return new Response(mergeSse(sources, sources.length ? "retry: 5000\n\n" : "retry: 30000\n\n"), { status: 200, headers: SSE_HEADERS });
});
