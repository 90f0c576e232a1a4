/**
 * The team's agents document (docs/architecture.md, "Team configuration"): which agents every machine
 * should have, at which version, with which non-secret settings. The third team document beside skills
 * and MCP servers, on the same fan-out and apply path; each machine installs or upgrades what it lacks
 * when it connects and when the document changes, and reports per agent.
 */
import { z } from "zod";
import { RegistryAgent } from "./registry";
import { AgentId, BoundedRecord, VersionSpec } from "./values";
import { strictResource } from "./resource";
import { applyResultOf, machineStatus, NOT_APPLIED } from "./team-documents";

/**
 * A name that says it holds a secret. The document is readable by every viewer and written to every
 * machine, so a credential has no place in it: credentials stay on each machine (its environment or
 * the agent's own login).
 */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION/i;

/**
 * Variables that change which program runs or what it loads before its own code (a preload, a library
 * path, a startup file, the command git runs for ssh). The team's document reaches every machine: one of
 * these in it would run code of the document's author in every agent on every machine, so they are
 * refused (SECURITY.md, "What is validated where"). Names match whatever their case.
 */
const LOADER_NAMES = new Set([
  "PATH",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_EXTRA_CA_CERTS",
  "BASH_ENV",
  "ENV",
  "SHELL",
  "SHELLOPTS",
  "IFS",
  "PROMPT_COMMAND",
  "PYTHONPATH",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PYTHONINSPECT",
  "PERL5LIB",
  "PERL5OPT",
  "PERLLIB",
  "RUBYLIB",
  "RUBYOPT",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "GCONV_PATH",
  "HOME",
  "GIT_SSH",
  "GIT_SSH_COMMAND",
  "GIT_ASKPASS",
  "SSH_ASKPASS",
  "GIT_EXEC_PATH",
  "GIT_PROXY_COMMAND",
  "GIT_EXTERNAL_DIFF",
  "GIT_EDITOR",
  "EDITOR",
  "VISUAL",
  "PAGER",
]);
/** Whole families: the dynamic loader's (glibc, macOS), git's and npm's configuration by variable. */
const LOADER_PREFIXES = ["LD_", "DYLD_", "GIT_CONFIG", "NPM_CONFIG_"];

export function loaderVariable(name: string): boolean {
  const upper = name.toUpperCase();
  return LOADER_NAMES.has(upper) || LOADER_PREFIXES.some((p) => upper.startsWith(p));
}

/** NUL and other control characters (a tab is allowed): a value is one line of text. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_IN_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/;

export const AgentSettingsEnv = BoundedRecord(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name"),
  z
    .string()
    .max(4096)
    .refine((v) => !CONTROL_IN_VALUE.test(v), "must not hold NUL or control characters"),
  32,
  "variables",
)
  .superRefine((env, ctx) => {
    for (const name of Object.keys(env)) {
      if (SECRET_NAME.test(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `${name} looks like a secret: the team document is readable by every viewer and copied to every machine; set credentials on the machine itself`,
        });
      else if (loaderVariable(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `${name} changes which program runs or what it loads: the team's document may not set it on every machine (set it on the machine itself if it must be)`,
        });
    }
  })
  .describe("non-secret defaults for the agent's process environment (a variable the machine's own environment sets wins)");

export const AgentsConfigEntry = strictResource("AgentsConfigEntry", {
  version: VersionSpec.default("latest").describe(
    "`latest`: the version the ACP registry names (upgraded when it moves on); or a version to pin (for an agent driven through an adapter, the adapter's version, as the registry names it)",
  ),
  env: AgentSettingsEnv.optional(),
});
export type AgentsConfigEntry = z.infer<typeof AgentsConfigEntry>;

export const AgentsConfig = strictResource("AgentsConfig", {
  agents: BoundedRecord(AgentId, AgentsConfigEntry, 64, "agents").describe("by agent id: a built-in name (claude) or an ACP registry id"),
});
export type AgentsConfig = z.infer<typeof AgentsConfig>;

const AgentApplied = z.object({
  installedVersion: z.string().nullable().describe("the version that runs the agent now (null: not installed)"),
  error: z.string().nullable().describe("why it is not at the version asked for"),
});

export const AgentsMachineStatus = machineStatus(
  "AgentsMachineStatus",
  { version: "the document version (ETag) this machine applied last", error: NOT_APPLIED },
  {
    agents: z.record(z.string(), AgentApplied).describe("per agent of the document"),
    errors: z.array(z.object({ agent: z.string(), error: z.string() })),
  },
);
export type AgentsMachineStatus = z.infer<typeof AgentsMachineStatus>;

/** What the machine object hands the sidecar: the document, and the registry's entry of each of its agents. */
export const AgentsApplyArgs = z.object({
  version: z.string(),
  config: AgentsConfig,
  entries: z.record(z.string(), RegistryAgent).describe("by the document's agent id: its registry entry, where the registry has one"),
});
export type AgentsApplyArgs = z.infer<typeof AgentsApplyArgs>;

/** `unchanged`: every agent was already installed at what the document asks and its settings were kept. */
export const AgentsApplyResult = applyResultOf(AgentsMachineStatus);
export type AgentsApplyResult = z.infer<typeof AgentsApplyResult>;
