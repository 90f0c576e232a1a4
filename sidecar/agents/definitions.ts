/**
 * Every agent the runtime knows, in one place: what to install from npm, how its ACP process
 * is launched, what it can do (the 18 capability flags) and where its credentials live.
 */
import { builtinName } from "@agent-runtime/protocol/registry";
import { Capabilities, type CapabilityName } from "@agent-runtime/protocol/agents";
import type { BUILTIN_AGENT_IDS } from "@agent-runtime/protocol/values";
import { CAPABILITY_NAMES } from "@agent-runtime/protocol/agents";

export type BuiltinAgentId = (typeof BUILTIN_AGENT_IDS)[number];
import type { McpFormat } from "../config/mcp-formats";

export interface NpmPackage {
  /** npm package name. */
  name: string;
  /** The bin of that package that is run. */
  bin: string;
  /** What is installed when the request names no version (default `latest`): a version known to work with the rest. */
  defaultVersion?: string;
}

export interface AgentDefinition {
  id: BuiltinAgentId;
  name: string;
  /** The agent itself (the CLI a developer would install). */
  native?: NpmPackage;
  /** The ACP adapter, for agents that do not speak ACP themselves. */
  acpAdapter?: NpmPackage;
  /**
   * Which installed bin speaks ACP on stdio, and with which arguments. `nativeEnv`: the variable through
   * which the adapter is told to run the installed agent binary (instead of one bundled in its own
   * dependencies), so that the version and path reported are those of the binary that runs.
   * `nativeHelpers`: a folder of helper programs the agent's package ships (found in its install and put
   * first on the adapter's PATH), such as Codex's sandbox (`codex-resources/bwrap`).
   */
  launch: { from: "native" | "acpAdapter" | "builtin"; args: string[]; nativeEnv?: string; nativeHelpers?: string };
  /**
   * What the agent needs to run as root, where it refuses to by default. Given only when the sidecar was
   * started with --allow-root-agents; otherwise starting the agent as root is refused with that advice.
   */
  asRoot?: { env: Record<string, string>; why: string };
  capabilities: Capabilities;
  credentials: {
    /** Any one of these environment variables is enough. */
    env: string[];
    /** Any one of these files (relative to HOME) is enough. */
    files: string[];
  };
  /** Where the agent reads skills (relative to HOME), if it has skills. */
  skillsDir?: string;
  /** Where the agent reads its MCP servers (relative to HOME) and in which of the known spellings (sidecar/config/mcp-formats.ts). */
  mcpConfig?: { file: string; format: McpFormat };
  /**
   * Why it cannot be installed from npm by this definition (no ACP-speaking package there): it installs
   * from its ACP registry entry instead when the registry has one.
   */
  unavailable?: string;
}

function caps(enabled: CapabilityName[]): Capabilities {
  return Capabilities.parse(Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, enabled.includes(n)])));
}

/** What a coding agent's ACP side offers in full: all but asking questions (elicitation) and one process shared by sessions. */
const FULL_CODING_AGENT: CapabilityName[] = CAPABILITY_NAMES.filter((name) => name !== "questions" && name !== "sharedProcess");

export const AGENTS: Record<BuiltinAgentId, AgentDefinition> = {
  claude: {
    id: "claude",
    name: "Claude Code",
    native: { name: "@anthropic-ai/claude-code", bin: "claude" },
    // The adapter (Node >= 22) runs the installed Claude Code, not the build its SDK carries.
    acpAdapter: { name: "@agentclientprotocol/claude-agent-acp", bin: "claude-agent-acp" },
    launch: { from: "acpAdapter", args: [], nativeEnv: "CLAUDE_CODE_EXECUTABLE" },
    asRoot: {
      env: { IS_SANDBOX: "1" },
      why: "Claude Code refuses to run as root with its permission bypass available (it exits with '--dangerously-skip-permissions cannot be used with root/sudo privileges')",
    },
    capabilities: caps([...FULL_CODING_AGENT, "questions"]),
    credentials: { env: ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"], files: [".claude/.credentials.json"] },
    skillsDir: ".claude/skills",
    mcpConfig: { file: ".claude.json", format: "claude" },
  },
  codex: {
    id: "codex",
    name: "Codex",
    native: { name: "@openai/codex", bin: "codex" },
    // codex-acp drives Codex's app server: the installed @openai/codex (at the version the adapter depends
    // on, unless one is asked for), whose sandbox helper (bwrap) is also put on the adapter's PATH.
    acpAdapter: { name: "@agentclientprotocol/codex-acp", bin: "codex-acp" },
    launch: { from: "acpAdapter", args: [], nativeEnv: "CODEX_PATH", nativeHelpers: "codex-resources" },
    capabilities: caps(FULL_CODING_AGENT.filter((c) => c !== "planMode")),
    credentials: { env: ["OPENAI_API_KEY", "CODEX_API_KEY"], files: [".codex/auth.json"] },
    skillsDir: ".codex/skills",
    mcpConfig: { file: ".codex/config.toml", format: "codex" },
  },
  gemini: {
    id: "gemini",
    name: "Gemini CLI",
    native: { name: "@google/gemini-cli", bin: "gemini" },
    launch: { from: "native", args: ["--experimental-acp"] },
    capabilities: caps(FULL_CODING_AGENT.filter((c) => c !== "planMode" && c !== "itemStarted")),
    credentials: { env: ["GEMINI_API_KEY", "GOOGLE_API_KEY"], files: [".gemini/oauth_creds.json"] },
    skillsDir: ".gemini/skills",
    mcpConfig: { file: ".gemini/settings.json", format: "gemini" },
  },
  opencode: {
    id: "opencode",
    name: "OpenCode",
    native: { name: "opencode-ai", bin: "opencode" },
    launch: { from: "native", args: ["acp"] },
    capabilities: caps([...FULL_CODING_AGENT, "sharedProcess"]),
    credentials: { env: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_API_KEY"], files: [".local/share/opencode/auth.json"] },
    skillsDir: ".config/opencode/skills",
    mcpConfig: { file: ".config/opencode/opencode.json", format: "opencode" },
  },
  pi: {
    id: "pi",
    name: "pi",
    // The last pi published under this name runs on Node 20; its successor (@earendil-works/pi-coding-agent)
    // needs Node 22.19, and so does every pi-acp after 0.0.23.
    native: { name: "@mariozechner/pi-coding-agent", bin: "pi" },
    acpAdapter: { name: "pi-acp", bin: "pi-acp", defaultVersion: "0.0.23" },
    launch: { from: "acpAdapter", args: [], nativeEnv: "PI_ACP_PI_COMMAND" },
    // pi runs its tools without asking: it has no permission requests, plan mode or MCP.
    capabilities: caps(FULL_CODING_AGENT.filter((c) => c !== "permissions" && c !== "planMode" && c !== "mcpTools")),
    credentials: { env: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"], files: [".pi/agent/auth.json"] },
    skillsDir: ".pi/agent/skills",
  },
  amp: {
    id: "amp",
    name: "Amp",
    native: { name: "@ampcode/cli", bin: "amp" },
    acpAdapter: { name: "@superagenticai/acp-amp", bin: "acp-amp" },
    unavailable:
      "Amp speaks no ACP, and no ACP adapter for it is published on the npm registry (@superagenticai/acp-amp is not there; @sourcegraph/amp became @ampcode/cli, a CLI without ACP): it installs only from an amp-acp entry of the ACP registry this deployment reads, and that registry has none",
    launch: { from: "acpAdapter", args: [] },
    capabilities: caps(FULL_CODING_AGENT.filter((c) => c !== "planMode" && c !== "images")),
    credentials: { env: ["AMP_API_KEY"], files: [".local/share/amp/secrets.json"] },
  },
  mock: {
    id: "mock",
    name: "Mock agent (built in, deterministic, no credentials)",
    launch: { from: "builtin", args: [] },
    capabilities: caps(["errorEvents", "permissions", "sessionLifecycle", "streamingDeltas", "textMessages", "toolCalls", "toolResults"]),
    credentials: { env: [], files: [] },
    skillsDir: ".mock-agent/skills",
    // Spelled as Claude Code's file, so the real path of every apply is exercised without a paid agent.
    mcpConfig: { file: ".mock-agent/mcp.json", format: "claude" },
  },
  "mock-login": {
    id: "mock-login",
    name: "Mock agent that must be logged in (built in: a terminal login, or MOCK_AGENT_KEY)",
    // The same mock, refusing sessions (ACP's auth_required) until it is logged in: sidecar/mock-agent/login.ts.
    launch: { from: "builtin", args: ["--require-login"] },
    capabilities: caps(["errorEvents", "permissions", "questions", "sessionLifecycle", "streamingDeltas", "textMessages", "toolCalls", "toolResults"]),
    credentials: { env: [], files: [] },
  },
};

const BY_NAME = new Map<string, AgentDefinition>(Object.entries(AGENTS));

/**
 * The built-in definition of an agent, by its name (`claude`) or its registry id (`claude-acp`); none for
 * an agent known only from the registry (sidecar/agents/registry-install.ts).
 */
export function builtinAgent(agent: string): AgentDefinition | undefined {
  return BY_NAME.get(agent) ?? BY_NAME.get(builtinName(agent));
}
