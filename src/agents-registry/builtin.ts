/**
 * The catalog when the registry was never reached (no network from the worker, a mirror down since
 * deploy): the agents the runtime has definitions for, at versions known to run with it. Not a copy of
 * the registry: only what makes a fresh deployment usable until the registry answers.
 */
import type { RegistryAgent } from "@agent-runtime/protocol/registry";

export const BUILTIN_CATALOG: RegistryAgent[] = [
  {
    id: "claude-acp",
    name: "Claude Agent",
    version: "0.101.0",
    description: "ACP wrapper for Anthropic's Claude",
    distribution: { npx: { package: "@agentclientprotocol/claude-agent-acp@0.101.0" } },
  },
  {
    id: "codex-acp",
    name: "Codex",
    version: "2.6.0",
    description: "ACP adapter for OpenAI's coding assistant",
    distribution: { npx: { package: "@agentclientprotocol/codex-acp@2.6.0" } },
  },
  {
    id: "gemini",
    name: "Gemini CLI",
    version: "0.61.0",
    description: "Google's official CLI for Gemini",
    distribution: { npx: { package: "@google/gemini-cli@0.61.0", args: ["--experimental-acp"] } },
  },
  {
    id: "opencode",
    name: "OpenCode",
    version: "latest",
    description: "The open source coding agent",
    distribution: { npx: { package: "opencode-ai", args: ["acp"] } },
  },
  {
    id: "pi-acp",
    name: "pi",
    version: "0.0.23",
    description: "ACP adapter for the pi coding agent",
    distribution: { npx: { package: "pi-acp@0.0.23" } },
  },
];
