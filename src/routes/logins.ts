/**
 * Logging agents in (docs/architecture.md, "Logins"; docs/agents.md, "Logging agents in"): whether an agent is
 * logged in on the machine and how it can be, a login by one of its methods (a value kept on the machine,
 * a terminal, the agent's own flow, and the page that flow asks a person to open), and logging out. Members of the machine may; the audit names the
 * agent and the method, never a value.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { machineStub, settled } from "../http/machine";
import { json, jsonBody, MACHINE_ERRORS, QueryFlag } from "../http/openapi";
import { relayRoute, withRelayRoutes } from "../http/relay-route";
import { AgentLogin, LoginAnswer, LoginRemoved, LoginRequest, LoginStarted } from "@agent-runtime/protocol/logins";
import { AgentId } from "@agent-runtime/protocol/values";

const AgentParams = z.object({ agent: AgentId });

/** A login is done by the agent on its machine: the problems of reaching the machine, and of an agent it does not have. */
const AGENT_ON_MACHINE = [...MACHINE_ERRORS, "unsupported_agent"] as const;

const start = apiRoute("post", "/agents/{agent}/login", {
  summary:
    "Log the agent in on the machine by one of its methods: env_var keeps the values on the machine (200), terminal starts its login command in a tty process (201), agent runs its own flow (202). Sessions that waited for the login start when it succeeds",
  access: { role: "member", machine: true },
  request: { params: AgentParams, body: jsonBody(LoginRequest) },
  answers: {
    200: json(LoginStarted, "the values are kept on the machine; `state` says whether the agent is logged in with them"),
    201: json(LoginStarted, "the login's terminal: open `process` in a terminal or type into it; its exit 0 ends the login"),
    202: json(LoginStarted, "the agent's own flow runs on the machine"),
  },
  problems: AGENT_ON_MACHINE,
});

const answer = apiRoute("post", "/agents/{agent}/login/elicitation", {
  summary:
    "Answer the page the agent's own login flow asked a person to open (`login.pending`): accept once the login is finished there, or decline or cancel it. Sessions that waited for the login start when the flow ends logged in",
  access: { role: "member", machine: true },
  request: { params: AgentParams, body: jsonBody(LoginAnswer) },
  answers: { 200: json(AgentLogin, "the answer reached the agent; its login now (the flow goes on: `state` changes when it ends)") },
  problems: AGENT_ON_MACHINE,
});

const remove = apiRoute("delete", "/agents/{agent}/login", {
  summary: "Log the agent out on the machine (its `logout`, where it has one) and remove the values kept for it",
  access: { role: "member", machine: true },
  request: { params: AgentParams },
  answers: { 200: json(LoginRemoved, "what was removed, and its login now") },
  problems: AGENT_ON_MACHINE,
});

export const loginRoutes = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
  relayRoute("get", "/agents/{agent}/login", {
    summary: "Whether the agent is logged in on the machine, the ways it can be, and the names of the values kept for it",
    access: { role: "viewer", machine: true },
    op: "logins.get",
    params: AgentParams,
    query: z.object({ no_cache: QueryFlag.describe("ask the agent again") }),
    args: ({ param: { agent }, query }) => ({ agent, noCache: query.no_cache }),
    answer: { status: 200, description: "its login" },
  }),
])
  .openapi(start, async function logIn(c) {
    const { agent } = c.req.valid("param");
    const request = c.req.valid("json");
    c.set("auditDetail", `agent ${agent}, method ${request.method.slice(0, 64)}`);
    const login = LoginStarted.parse(settled(await machineStub(c).agentLogin(agent, request)));
    return c.json(login, login.type === "env_var" ? 200 : login.type === "terminal" ? 201 : 202);
  })
  .openapi(answer, async function answerLoginPage(c) {
    const { agent } = c.req.valid("param");
    const body = c.req.valid("json");
    c.set("auditDetail", `agent ${agent}, ${body.action}`);
    return c.json(AgentLogin.parse(settled(await machineStub(c).agentLoginAnswer(agent, body))), 200);
  })
  .openapi(remove, async function logOut(c) {
    const { agent } = c.req.valid("param");
    c.set("auditDetail", `agent ${agent}`);
    return c.json(LoginRemoved.parse(settled(await machineStub(c).agentLogout(agent))), 200);
  });
