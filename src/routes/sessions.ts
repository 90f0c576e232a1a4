/**
 * Sessions (docs/architecture.md, "Sessions"): every ACP session that went through the relay, listed
 * across the machines in the caller's scope, with its transcript, and the ways on from it (continue,
 * answer a permission, close). Records live in each machine's Durable Object; a list asks the machines
 * that have sessions (the team knows which), a bounded number at a time.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { machinesToList } from "../http/access";
import { machineObject } from "../durable/stubs";
import { PAGE_LIMIT, pageAcross, pageQuery, readCursor } from "../http/paging";
import { callerOf, relay, settled } from "../http/machine";
import { dropCheckpoints } from "./changes";
import { prefers } from "../http/negotiation";
import { json, jsonBody, LastEventIdHeader, QueryFlag } from "../http/openapi";
import { settings } from "../settings";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { AgentId } from "@agent-runtime/protocol/values";
import {
  ElicitationAnswer,
  machineOfSession,
  PermissionAnswer,
  PromptEntry,
  PromptRequest,
  Session,
  SessionId,
  SessionList,
  SessionState,
  TranscriptPage,
} from "@agent-runtime/protocol/sessions";

const IdParams = z.object({ id: SessionId });

const list = apiRoute("get", "/sessions", {
  summary: "Sessions on every machine in the token's scope, newest activity first, a page at a time",
  access: { role: "viewer", machine: false },
  request: {
    query: pageQuery("sessions", "ses").extend({
      agent: AgentId.optional(),
      state: SessionState.optional(),
      createdBy: z.string().max(128).optional().describe("the name of the token that started them"),
      discover: QueryFlag.describe("with machine: also the sessions the agents themselves keep there (session/list)"),
      cwd: z.string().max(4096).optional().describe("with discover: only sessions of this folder"),
    }),
  },
  answers: { 200: json(SessionList, "a page of sessions") },
  problems: ["not_found", "machine_offline", "timeout"],
});

const get = apiRoute("get", "/sessions/{id}", {
  summary: "A session's record: state, what it waits for, where it runs",
  access: { role: "viewer", machine: "session" },
  request: { params: IdParams },
  answers: { 200: json(Session, "the record") },
});

const transcript = apiRoute("get", "/sessions/{id}/transcript", {
  summary: "A session's transcript (readable while its machine is offline); with Accept: text/event-stream it follows live",
  access: { role: "viewer", machine: "session" },
  request: {
    params: IdParams,
    query: z.object({
      after: z.coerce.number().int().min(0).optional().describe("entries after this sequence (default 0)"),
      limit: z.coerce.number().int().min(1).max(1000).optional().describe("entries per page (default 200)"),
    }),
    headers: LastEventIdHeader,
  },
  answers: {
    200: {
      description:
        "a page of entries; or an SSE stream of `event: entry` (`id:` its seq; an entry that grows is sent again) and `event: session` (the record, when it changes)",
      content: { "application/json": { schema: TranscriptPage }, "text/event-stream": { schema: z.string() } },
    },
  },
});

const remove = apiRoute("delete", "/sessions/{id}", {
  summary: "Close a session (session/close where the agent has it; its server stops when no open session uses it)",
  access: { role: "member", machine: "session" },
  request: { params: IdParams, query: z.object({ purge: QueryFlag.describe("also drop the transcript and the machine's checkpoints of it") }) },
  answers: { 200: json(Session, "the closed record") },
  problems: ["machine_offline", "timeout"],
});

const continueRoute = apiRoute("post", "/sessions/{id}/continue", {
  summary: "Start a new session in the same folder whose first prompt carries a bounded digest of this one's conversation",
  access: { role: "member", machine: "session" },
  request: { params: IdParams },
  answers: { 201: json(Session, "the new session: prompt it through POST /v1/acp/{serverId} with its sessionId") },
  problems: ["agent_process_exited", "machine_offline", "timeout", "stream_error"],
});

/** Answering what a session waits on, as its client would: the record after the answer. */
function answerRoute<P extends string, B extends z.ZodType>(path: P, summary: string, body: B) {
  return apiRoute("post", path, {
    summary,
    access: { role: "member", machine: "session" },
    request: { params: IdParams, body: jsonBody(body) },
    answers: { 200: json(Session, "the record after the answer") },
    problems: ["conflict", "machine_offline", "timeout"],
  });
}

const permission = answerRoute(
  "/sessions/{id}/permission",
  "Answer the permission request a session waits on, as its client would (optionId null cancels it)",
  PermissionAnswer,
);

const elicitation = answerRoute(
  "/sessions/{id}/elicitation",
  "Answer the question a session waits on (elicitation/create), as its client would: accept (with the form's content), decline or cancel",
  ElicitationAnswer,
);

const promptRoute = apiRoute("post", "/sessions/{id}/prompt", {
  summary: "Prompt a session: sent at once when its machine is there and no turn runs, else queued and sent when it can be, in order, once",
  access: { role: "member", machine: "session" },
  request: { params: IdParams, body: jsonBody(PromptRequest) },
  answers: { 202: json(PromptEntry, "sent, or queued (the record's `queued` lists it; its transcript says so)") },
  problems: ["conflict", "payload_too_large"],
});

const cancelQueuedRoute = apiRoute("delete", "/sessions/{id}/queue/{entry}", {
  summary: "Cancel a queued prompt before it is sent (409 once it was sent)",
  access: { role: "member", machine: "session" },
  request: { params: IdParams.extend({ entry: z.string().regex(/^prm-[0-9a-f]{16}$/, "a queued prompt's id (prm-…)") }) },
  answers: { 200: json(PromptEntry, "cancelled") },
  problems: ["conflict"],
});

function sessionStub(c: Context<AppEnv>, id: string) {
  return machineObject(c.env, machineOfSession(id));
}

function notFound(id: string): never {
  throw new ProblemError("not_found", `no session '${id}'`);
}

export const sessionRoutes = new OpenAPIHono<AppEnv>()
  .openapi(list, async function listSessions(c) {
    const query = c.req.valid("query");
    const machine = query.machine ?? c.req.param("machine");
    const limit = query.limit ?? PAGE_LIMIT;
    if (query.discover && !machine) throw new ProblemError("invalid_request", "discover=true asks one machine's agents: name it with ?machine=");
    const machines = await machinesToList(c, machine);
    const cursor = readCursor(query.cursor);
    const filter = {
      ...(query.agent ? { agent: query.agent } : {}),
      ...(query.state ? { state: query.state } : {}),
      ...(query.createdBy ? { createdBy: query.createdBy } : {}),
    };
    const ask = (m: string) => machineObject(c.env, m).listSessions(filter, cursor, limit);
    const page = await pageAcross(machines, limit, { ask, itemsOf: (p) => p.sessions, at: (s) => s.lastActivityMs });
    const body: SessionList = { sessions: page.items, nextCursor: page.nextCursor };
    if (query.discover && machine) {
      const agents = query.agent
        ? [query.agent]
        : (await relay(c, "agents.list", { config: false, noCache: false })).agents.filter((a) => a.installed).map((a) => a.id);
      body.discovered = settled(await machineObject(c.env, machine).discoverSessions(agents, query.cwd));
    }
    return c.json(body, 200);
  })
  .openapi(get, async function getSession(c) {
    const { id } = c.req.valid("param");
    const record = await sessionStub(c, id).getSession(id);
    return record ? c.json(record, 200) : notFound(id);
  })
  .openapi(transcript, async function readTranscript(c) {
    const { id } = c.req.valid("param");
    const { after, limit } = c.req.valid("query");
    const stub = sessionStub(c, id);
    if (prefers(c.req.header("accept"), "text/event-stream", "application/json")) {
      const from = Number(c.req.valid("header")["last-event-id"] ?? after ?? 0);
      return await stub.followTranscript(id, from, callerOf(c));
    }
    const page = await stub.readTranscript(id, after ?? 0, limit ?? 200);
    return page ? c.json(page, 200) : notFound(id);
  })
  .openapi(remove, async function closeSession(c) {
    const { id } = c.req.valid("param");
    const { purge } = c.req.valid("query");
    const closed = settled(await sessionStub(c, id).closeSession(id, purge, c.get("identity").name));
    if (purge) await dropCheckpoints(c, closed);
    return c.json(closed, 200);
  })
  .openapi(continueRoute, async function continueSession(c) {
    const { id } = c.req.valid("param");
    return c.json(settled(await sessionStub(c, id).continueSession(id, c.get("identity").name, settings(c.env).acpTimeoutMs)), 201);
  })
  .openapi(permission, async function answerPermission(c) {
    const { id } = c.req.valid("param");
    return c.json(settled(await sessionStub(c, id).answerPermission(id, c.req.valid("json"), c.get("identity").name)), 200);
  })
  .openapi(elicitation, async function answerElicitation(c) {
    const { id } = c.req.valid("param");
    return c.json(settled(await sessionStub(c, id).answerElicitation(id, c.req.valid("json"), c.get("identity").name)), 200);
  })
  .openapi(promptRoute, async function queuePrompt(c) {
    const { id } = c.req.valid("param");
    const { prompt } = c.req.valid("json");
    // Text is one text block: what the agent receives is the same either way.
    const blocks = typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    return c.json(settled(await sessionStub(c, id).queuePrompt(id, blocks, c.get("identity").name)), 202);
  })
  .openapi(cancelQueuedRoute, async function cancelQueuedPrompt(c) {
    const { id, entry } = c.req.valid("param");
    return c.json(settled(await sessionStub(c, id).cancelQueuedPrompt(id, entry)), 200);
  });
