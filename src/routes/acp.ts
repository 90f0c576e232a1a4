/** The ACP relay: JSON-RPC to and from an agent's ACP process on the machine (docs/api.md, "Driving an agent over HTTP"; docs/architecture.md, "One call"). */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { callerOf, machineStub, parsedAnswer, settled } from "../http/machine";
import { RELAY_POST_ACCESS, relayAcpMessage } from "../http/relay-post";
import { json, LastEventIdHeader, jsonBody, MACHINE_ERRORS } from "../http/openapi";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { AcpServerList } from "@agent-runtime/protocol/acp";
import { accepts } from "../http/negotiation";
import { jsonBodyText } from "../http/validation";
import { RelayParams, RelayQuery, relayInput } from "../http/relay-input";

const post = apiRoute("post", "/acp/{server_id}", {
  summary: "Send one JSON-RPC message to an ACP server (the first POST for an id starts it)",
  access: RELAY_POST_ACCESS,
  request: {
    params: RelayParams,
    query: RelayQuery,
    body: jsonBody(JsonRpcMessage),
  },
  answers: {
    200: json(JsonRpcMessage, "the agent's response to a request"),
    202: { description: "a notification or a response was delivered to the agent" },
  },
  problems: [
    "unsupported_agent",
    "agent_not_installed",
    "not_acceptable",
    "conflict",
    "payload_too_large",
    "agent_process_exited",
    "session_not_resumable",
    "machine_offline",
    "timeout",
  ],
});

const stream = apiRoute("get", "/acp/{server_id}", {
  summary: "Server-sent events: every message the agent writes (notifications and its requests to the client)",
  access: { role: "viewer", machine: true },
  request: { params: RelayParams, headers: LastEventIdHeader },
  answers: {
    200: {
      description: "text/event-stream of `event: message` with `id: <seq>`; `event: end` when the agent exits",
      content: { "text/event-stream": { schema: z.string() } },
    },
  },
  problems: ["not_acceptable", "machine_offline"],
});

const remove = apiRoute("delete", "/acp/{server_id}", {
  summary: "Stop an ACP server's agent process (idempotent)",
  access: { role: "member", machine: true },
  request: { params: RelayParams },
  answers: { 204: { description: "stopped, or was not running" } },
  problems: MACHINE_ERRORS,
});

const list = apiRoute("get", "/acp", {
  summary: "The live ACP servers of the machine",
  access: { role: "viewer", machine: true },
  answers: { 200: json(AcpServerList, "live servers") },
  problems: MACHINE_ERRORS,
});

const acpRoutesBase = new OpenAPIHono<AppEnv>();
// The document shows the POST's body as declared; the handler reads that body itself, as text (below).
acpRoutesBase.openAPIRegistry.registerPath(post);

export const acpRoutes = acpRoutesBase
  // The relay's hot path (docs/architecture.md, "The relay's message as text"): the body's text,
  // not a parsed object cloned into the machine's object, goes there; the object reads it once, against the
  // same schema, with the same 400 a declared body gets. The path and the query are read by hand in their
  // common form, with the same 400s (http/relay-input.ts).
  .openapi({ ...post, hide: true, request: {} }, async function postToAcpServer(c) {
    const input = relayInput(c);
    if (input instanceof Response) return input;
    if (!accepts(c.req.header("accept"), "application/json")) {
      throw new ProblemError("not_acceptable", "this endpoint answers application/json; send 'Accept: application/json'");
    }
    const text = await jsonBodyText(c); // read and checked by the machine's object (a 400 as a declared body's)
    if (!input.agent) c.set("auditQuiet", true); // a message within a session its first POST (which named the agent) audited
    return relayAcpMessage(c.env, c.get("machine"), c.get("identity"), input, text);
  })
  .openapi(stream, async function followAcpServer(c) {
    if (!accepts(c.req.header("accept"), "text/event-stream")) {
      throw new ProblemError("not_acceptable", "this endpoint streams text/event-stream; send 'Accept: text/event-stream'");
    }
    const { server_id } = c.req.valid("param");
    const after = Number(c.req.valid("header")["last-event-id"] ?? 0);
    const stub = machineStub(c);
    return await stub.openStream({ kind: "acp", serverId: server_id }, after, callerOf(c));
  })
  .openapi(remove, async function stopAcpServer(c) {
    settled(await machineStub(c).acpStop(c.req.valid("param").server_id, callerOf(c)));
    return c.body(null, 204);
  })
  // Through the object, which leaves out the connections of other tokens (docs/architecture.md, "ACP's remote transport").
  .openapi(list, async function listAcpServers(c) {
    return c.json(parsedAnswer("acp.list", await machineStub(c).acpList(callerOf(c))), 200);
  });
