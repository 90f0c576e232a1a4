/**
 * ACP's remote transport at `/acp` and `/machines/{machine}/acp` (docs/architecture.md, "ACP's remote
 * transport"), as the ACP SDK's `experimental/http-client` and `experimental/ws-client` speak it:
 * POST a client message (`initialize` opens a connection and is answered at once with its
 * `Acp-Connection-Id`; anything after is 202 and answered on a stream), GET the connection's or a
 * session's SSE stream, GET with an upgrade for the WebSocket form, DELETE to close.
 */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { callerOf, machineStub, settled } from "../http/machine";
import { accepts } from "../http/negotiation";
import { jsonBody } from "../http/openapi";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { isJsonRpcRequest, JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { AgentId } from "@agent-runtime/protocol/values";
import { settings } from "../settings";
import { acpSocketUpgrade } from "../durable/machine/object-requests";
import { HEADER_CONNECTION_ID, HEADER_SESSION_ID } from "../durable/acp-transport/connection";

const Headers = z.object({
  [HEADER_CONNECTION_ID]: z.string().min(1).max(128).optional().describe("the connection, from the answer to initialize"),
  [HEADER_SESSION_ID]: z.string().min(1).max(1024).optional().describe("the session a session-scoped message (or stream) is for"),
});

const AgentQuery = z.object({
  agent: AgentId.optional().describe("the agent a new connection starts (initialize, or the WebSocket upgrade); DEFAULT_AGENT when absent"),
});

const post = apiRoute("post", "/acp", {
  summary: "ACP remote transport: one client message (initialize opens a connection)",
  access: { role: "member", machine: true },
  request: { query: AgentQuery, headers: Headers, body: jsonBody(JsonRpcMessage) },
  answers: {
    200: {
      description: "the agent's answer to initialize; `Acp-Connection-Id` names the new connection",
      headers: { [HEADER_CONNECTION_ID]: { schema: { type: "string" } } },
      content: { "application/json": { schema: JsonRpcMessage } },
    },
    202: { description: "the message is on its way to the agent; a request's answer comes on the connection's or its session's stream" },
  },
  problems: ["conflict", "unsupported_agent", "agent_not_installed", "agent_process_exited", "payload_too_large", "machine_offline", "timeout"],
});

const stream = apiRoute("get", "/acp", {
  summary: "ACP remote transport: the connection's or a session's SSE stream, or the WebSocket form (Upgrade: websocket)",
  access: { role: "member", machine: true },
  request: { query: AgentQuery, headers: Headers },
  answers: {
    101: { description: "the WebSocket form: one socket is one connection; `initialize` first, then any message, as text frames" },
    200: {
      description:
        "text/event-stream of `data: <one JSON-RPC message>`: without Acp-Session-Id, what is not for a session (answers to initialize-level requests, `session/load`'s answer); with it, that session's notifications, requests and answers",
      content: { "text/event-stream": { schema: z.string() } },
    },
  },
  problems: ["not_acceptable", "machine_offline"],
});

const remove = apiRoute("delete", "/acp", {
  summary: "ACP remote transport: close a connection (its agent stops; its sessions stay recorded)",
  access: { role: "member", machine: true },
  request: { headers: Headers },
  answers: { 202: { description: "closed" } },
  problems: ["machine_offline"],
});

function agentOf(c: Context<AppEnv>, named: AgentId | undefined): AgentId {
  const agent = named ?? settings(c.env).defaultAgent;
  if (!agent) throw new ProblemError("invalid_request", "name the agent of a new connection: /acp?agent=<id> (or set DEFAULT_AGENT on the worker)");
  return agent;
}

function connectionOf(headers: z.infer<typeof Headers>): string {
  const id = headers[HEADER_CONNECTION_ID];
  if (!id) throw new ProblemError("invalid_request", "Missing Acp-Connection-Id: initialize opens a connection and its answer names it");
  return id;
}

export const acpTransportRoutes = new OpenAPIHono<AppEnv>()
  .openapi(post, async function postAcpMessage(c) {
    const message = c.req.valid("json");
    const headers = c.req.valid("header");
    if (message.method === "initialize") {
      if (headers[HEADER_CONNECTION_ID]) throw new ProblemError("invalid_request", "Initialize not allowed on an existing connection");
      if (!isJsonRpcRequest(message)) throw new ProblemError("invalid_request", "initialize must be a request with an id");
      const opened = settled(await machineStub(c).acpConnect(agentOf(c, c.req.valid("query").agent), message, callerOf(c)));
      return c.body(opened.body, 200, { "content-type": "application/json", [HEADER_CONNECTION_ID]: opened.connectionId });
    }
    const connectionId = connectionOf(headers);
    c.set("auditQuiet", true); // a message within a connection its initialize (which was audited) opened
    settled(await machineStub(c).acpConnectionPost(connectionId, headers[HEADER_SESSION_ID] ?? null, message, callerOf(c)));
    return c.body(null, 202);
  })
  .openapi(stream, async function followAcpConnection(c) {
    if (c.req.header("upgrade")?.toLowerCase() === "websocket") {
      const agent = agentOf(c, c.req.valid("query").agent);
      const upgrade = acpSocketUpgrade(agent, callerOf(c));
      c.set("auditRead", true); // opening a WebSocket connection starts an agent
      return await machineStub(c).fetch(upgrade);
    }
    if (!accepts(c.req.header("accept"), "text/event-stream")) {
      throw new ProblemError("not_acceptable", "this endpoint streams text/event-stream; send 'Accept: text/event-stream' (or upgrade to a WebSocket)");
    }
    const headers = c.req.valid("header");
    return await machineStub(c).acpConnectionStream(connectionOf(headers), headers[HEADER_SESSION_ID] ?? null, callerOf(c));
  })
  .openapi(remove, async function closeAcpConnection(c) {
    settled(await machineStub(c).acpConnectionClose(connectionOf(c.req.valid("header")), callerOf(c)));
    return c.body(null, 202);
  });
