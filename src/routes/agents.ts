/**
 * Agents on the machine beside the ACP registry's catalog: what is installed, credentials, capabilities,
 * what the registry offers; installs by the runtime's own definitions or by a registry entry's
 * distribution (docs/architecture.md, "Agents").
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { opProblems } from "../http/relay-route";
import { settings } from "../settings";
import { relay } from "../http/machine";
import { json, jsonBody, QueryFlag } from "../http/openapi";
import { deploymentCatalog } from "../agents-registry/deployment";
import { withRegistry } from "../agents-registry/merge";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { builtinName, distributionKinds, RegistryAgent, registryIdOf } from "@agent-runtime/protocol/registry";
import { AgentInfo, AgentList, AgentRegistryInfo, InstallRequest, InstallResult } from "@agent-runtime/protocol/agents";
import { AgentId, BUILTIN_AGENT_IDS } from "@agent-runtime/protocol/values";

const AgentParams = z.object({ agent: AgentId });
const InfoQuery = z.object({
  config: QueryFlag.describe("include version, path and configOptions (slower: starts the agent's ACP process once)"),
  no_cache: QueryFlag.describe("bypass the version cache"),
});

const list = apiRoute("get", "/agents", {
  summary: "Every agent of the machine (built-in and installed from the registry), then every agent of the ACP registry it lacks",
  access: { role: "viewer", machine: true },
  request: { query: InfoQuery },
  answers: { 200: json(AgentList, "agents") },
  problems: ["machine_offline", "timeout", "conflict"],
});

const get = apiRoute("get", "/agents/{agent}", {
  summary: "One agent: installed, credentials, capabilities; with config=true its version, path and config options",
  access: { role: "viewer", machine: true },
  request: { params: AgentParams, query: InfoQuery },
  answers: { 200: json(AgentInfo, "the agent") },
  problems: opProblems("agents.get"),
});

const install = apiRoute("post", "/agents/{agent}/install", {
  summary:
    "Install (or upgrade) an agent on the machine: a built-in one from npm, any other by its registry entry (npx, a binary for the machine's platform, or uvx)",
  access: { role: "member", machine: true },
  request: { params: AgentParams, body: { ...jsonBody(InstallRequest), required: false } },
  answers: { 200: json(InstallResult, "what is installed now") },
  problems: opProblems("agents.install"),
});

const RegistryCatalog = z
  .object({
    url: z.string(),
    source: z.enum(["registry", "cache", "stale", "builtin"]),
    fetchedAtMs: z.number().int().nullable(),
    error: z.string().nullable(),
    agents: z.array(RegistryAgent.extend({ distributions: AgentRegistryInfo.shape.distributions, builtin: z.string().nullable() })),
  })
  .meta({ id: "RegistryCatalog" });

const catalog = apiRoute("get", "/registry/agents", {
  summary: "The ACP agent registry as this deployment reads it (ACP_REGISTRY_URL): fetched, kept with its ETag, or the built-in list",
  access: { role: "viewer", machine: false },
  answers: { 200: json(RegistryCatalog, "the catalog") },
});

/** Built-in names are not registry ids: an install of `claude` never looks the registry up. */
const BUILTINS: ReadonlySet<string> = new Set(BUILTIN_AGENT_IDS);
const isBuiltin = (agent: string) => BUILTINS.has(builtinName(agent));

export const agentRoutes = new OpenAPIHono<AppEnv>()
  .openapi(catalog, async function readRegistryCatalog(c) {
    const loaded = await deploymentCatalog(c.env);
    return c.json(
      { ...loaded, agents: loaded.agents.map((a) => ({ ...a, distributions: distributionKinds(a), builtin: isBuiltin(a.id) ? builtinName(a.id) : null })) },
      200,
    );
  })
  .openapi(list, async function listAgents(c) {
    const { config, no_cache } = c.req.valid("query");
    const [machine, loaded] = await Promise.all([relay(c, "agents.list", { config, noCache: no_cache }), deploymentCatalog(c.env)]);
    const platform = machine.platform ?? null;
    return c.json(
      {
        agents: withRegistry(machine.agents, loaded.agents, platform),
        ...(machine.platform ? { platform: machine.platform } : {}),
        registry: { url: loaded.url, source: loaded.source, fetchedAtMs: loaded.fetchedAtMs, error: loaded.error },
      },
      200,
    );
  })
  .openapi(get, async function getAgent(c) {
    const { config, no_cache } = c.req.valid("query");
    const { agent } = c.req.valid("param");
    const [{ platform, ...info }, loaded] = await Promise.all([relay(c, "agents.get", { agent, config, noCache: no_cache }), deploymentCatalog(c.env)]);
    const [merged] = withRegistry([info], loaded.agents, platform ?? null).filter((a) => a.id === agent);
    // Known to nobody: not built in, not installed, not in the registry.
    if (!isBuiltin(agent) && !info.installed && !merged?.registry)
      throw new ProblemError("unsupported_agent", `'${agent}' is neither built in, installed, nor an agent of the registry`);
    return c.json(merged ?? info, 200);
  })
  .openapi(install, async function installAgent(c) {
    const request = c.req.valid("json") ?? {};
    const { agent } = c.req.valid("param");
    const timeout = settings(c.env).installTimeoutMs;
    // The registry's entry goes with the install: a built-in agent takes its version from it (unless the
    // request names one), any other installs by it (the sidecar never reads the registry).
    const loaded = await deploymentCatalog(c.env);
    const entry = loaded.agents.find((a) => a.id === registryIdOf(agent));
    if (!entry && !isBuiltin(agent)) {
      throw new ProblemError(
        "unsupported_agent",
        `'${agent}' is neither built in nor an agent of the registry (${loaded.url}${loaded.error ? `, unreachable: ${loaded.error}` : ""})`,
      );
    }
    return c.json(await relay(c, "agents.install", { agent, request, ...(entry ? { entry } : {}) }, timeout), 200);
  });
