/**
 * Agents: installing one, and what a machine says of each (version, capabilities, install state).
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { AgentLogin } from "./logins";
import { AgentId, VersionSpec } from "./values";
import { resource, strictResource } from "./resource";

export const InstallRequest = strictResource("InstallRequest", {
  agentVersion: VersionSpec.optional(),
  agentProcessVersion: VersionSpec.optional(),
  reinstall: z.boolean().optional(),
});
export type InstallRequest = z.infer<typeof InstallRequest>;

export const Artifact = resource("Artifact", {
  kind: z.enum(["native_agent", "agent_process"]),
  path: z.string(),
  source: z.enum(["npm", "builtin", "local_path", "binary", "uvx"]),
  version: z.string(),
});
export type Artifact = z.infer<typeof Artifact>;

export const InstallResult = resource("InstallResult", { already_installed: z.boolean(), artifacts: z.array(Artifact) });
export type InstallResult = z.infer<typeof InstallResult>;

// ---------- 2.5 / 2.6 agent info ----------

export const CAPABILITY_NAMES = [
  "commandExecution",
  "errorEvents",
  "fileAttachments",
  "fileChanges",
  "images",
  "itemStarted",
  "mcpTools",
  "permissions",
  "planMode",
  "questions",
  "reasoning",
  "sessionLifecycle",
  "sharedProcess",
  "status",
  "streamingDeltas",
  "textMessages",
  "toolCalls",
  "toolResults",
] as const;
export type CapabilityName = (typeof CAPABILITY_NAMES)[number];

export const Capabilities = z
  .object(Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, z.boolean()])) as Record<CapabilityName, z.ZodBoolean>)
  .meta({ id: "Capabilities" });
export type Capabilities = z.infer<typeof Capabilities>;

/** What an agent known only from the registry can do is not known before a session asks it (initialize). */
export const UNKNOWN_CAPABILITIES = Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, false])) as Capabilities;

export const ServerStatus = resource("ServerStatus", {
  status: z.enum(["running", "stopped"]),
  uptimeMs: z.number().int().nullable(),
  servers: z.number().int(),
});

/** What the ACP registry says of an agent, beside what the machine has (GET /v1/agents). */
export const AgentRegistryInfo = resource("AgentRegistryInfo", {
  id: z.string().describe("its registry id"),
  version: z.string().describe("the version the registry offers"),
  distributions: z.array(z.enum(["npx", "binary", "uvx"])),
  installable: z.boolean().describe("this machine can install it (a build for its platform, or npx/uvx)"),
  reason: z.string().nullable().describe("why not, when it cannot"),
});
export type AgentRegistryInfo = z.infer<typeof AgentRegistryInfo>;

export const AgentInfo = resource("AgentInfo", {
  id: AgentId,
  name: z.string().optional(),
  description: z.string().optional(),
  installed: z.boolean(),
  installedVersion: z.string().nullable().optional().describe("the version installed, as recorded when it was"),
  registry: AgentRegistryInfo.nullable().optional().describe("the registry's entry, when the registry lists this agent"),
  updateAvailable: z.boolean().nullable().optional().describe("the registry offers another version than the one installed (null: not comparable)"),
  credentialsAvailable: z.boolean(),
  capabilities: Capabilities,
  configError: z.string().nullable().optional(),
  configOptions: z.array(z.unknown()).nullable().optional(),
  path: z.string().nullable().optional(),
  version: z.string().nullable().optional(),
  serverStatus: ServerStatus.optional(),
  login: AgentLogin.optional().describe("whether the agent is logged in on this machine and how it can be (asked of the agent once, then kept)"),
});
export type AgentInfo = z.infer<typeof AgentInfo>;

export const AgentList = resource("AgentList", {
  agents: z.array(AgentInfo),
  platform: z.string().optional().describe("the machine's platform as Node names it (linux-x64, darwin-arm64, …)"),
  registry: z
    .object({
      url: z.string(),
      source: z.enum(["registry", "cache", "stale", "builtin"]),
      fetchedAtMs: z.number().int().nullable(),
      error: z.string().nullable(),
    })
    .optional()
    .describe("where the registry entries came from: read now, kept, kept while the registry is unreachable, or the built-in list"),
});
