/** Agents on the machine: what is installed, credentials, capabilities; real installs from npm (docs/architecture.md, "Agents"). */
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { settings } from "../settings";
import { declare } from "../http/access";
import { relay } from "../http/machine";
import { errors, json, jsonBody, MACHINE_ERRORS, QueryFlag } from "../http/openapi";
import { AgentId, AgentInfo, AgentList, InstallRequest, InstallResult } from "../protocol/resources";

const AgentParams = z.object({ agent: AgentId });
const InfoQuery = z.object({
  config: QueryFlag.describe("include version, path and configOptions (slower: starts the agent's ACP process once)"),
  no_cache: QueryFlag.describe("bypass the version cache"),
});

const list = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/agents",
      summary: "Every agent this runtime knows, as installed on the machine",
      request: { query: InfoQuery },
      responses: { 200: json(AgentList, "agents"), ...errors(...MACHINE_ERRORS) },
    },
  ),
);

const get = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/agents/{agent}",
      summary: "One agent: installed, credentials, capabilities; with config=true its version, path and config options",
      request: { params: AgentParams, query: InfoQuery },
      responses: { 200: json(AgentInfo, "the agent"), ...errors(...MACHINE_ERRORS, "unsupported_agent") },
    },
  ),
);

const install = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/agents/{agent}/install",
      summary: "Install an agent (and its ACP adapter) from the npm registry on the machine",
      request: { params: AgentParams, body: { ...jsonBody(InstallRequest), required: false } },
      responses: {
        200: json(InstallResult, "what is installed now"),
        ...errors(...MACHINE_ERRORS, "unsupported_agent", "install_failed", "package_unavailable", "unsupported_media_type"),
      },
    },
  ),
);

export const agentRoutes = new OpenAPIHono<AppEnv>()
  .openapi(list, async (c) => {
    const { config, no_cache } = c.req.valid("query");
    return c.json(await relay(c, "agents.list", { config, noCache: no_cache }), 200);
  })
  .openapi(get, async (c) => {
    const { config, no_cache } = c.req.valid("query");
    return c.json(await relay(c, "agents.get", { agent: c.req.valid("param").agent, config, noCache: no_cache }), 200);
  })
  .openapi(install, async (c) => {
    const request = c.req.valid("json") ?? {};
    const timeout = settings(c.env).installTimeoutMs;
    return c.json(await relay(c, "agents.install", { agent: c.req.valid("param").agent, request }, timeout), 200);
  });
