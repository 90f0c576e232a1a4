/**
 * The team's sandbox rules (docs/architecture.md, "Sandboxes: the team's rules"): part of the team's policy
 * document, evaluated by the worker each time it starts an agent server. Rules in order; the first whose
 * `match` holds (agent, machine, origin of the work) decides the sandbox asked for. No rule matching means
 * the default of the origin (SECURITY.md, "Sandboxes"): unattended work never starts as `full`.
 * The sidecar then applies the stricter of what is asked and its owner's floor.
 */
import { z } from "zod";
import { DeniedPath, SandboxNetwork, SandboxProfile, SandboxSpec, WorkOrigin } from "./sandbox";
import { AgentId, Identifier } from "./values";
import { resource, strictResource } from "./resource";

export const SandboxMatch = strictResource("SandboxMatch", {
  agents: z.array(AgentId).min(1).max(64).optional().describe("the agents it applies to (any, when absent)"),
  machines: z.array(Identifier).min(1).max(256).optional().describe("the machines it applies to (any, when absent)"),
  origins: z
    .array(WorkOrigin)
    .min(1)
    .max(4)
    .optional()
    .describe("where the work came from: `session` (a person's), `task`, `schedule`, `trigger` (any, when absent)"),
});
export type SandboxMatch = z.infer<typeof SandboxMatch>;

export const SandboxRule = z
  .object({
    name: z.string().min(1).max(80).optional().describe("how the session's record and the policy tester name the rule (else its number)"),
    match: SandboxMatch.default({}),
    profile: SandboxProfile,
    network: SandboxNetwork,
    agentHosts: z
      .boolean()
      .default(true)
      .describe("with `allowlist`: the agent's own model API hosts are allowed too (api.anthropic.com for claude, …), so its model calls keep working"),
    denyRead: z.array(DeniedPath).max(256).default([]).describe("never readable, beside the built-in secrets (~/.ssh, ~/.aws, …)"),
  })
  .strict()
  .refine((r) => r.network.mode === "allowlist" || r.network.allow.length === 0, {
    message: "`network.allow` goes only with mode allowlist",
    path: ["network", "allow"],
  })
  .meta({ id: "SandboxRule" });
export type SandboxRule = z.infer<typeof SandboxRule>;

/** The hosts everything unattended needs beside the model: packages (npx agents, `npm install`) and git over HTTPS. */
export const COMMON_HOSTS = ["registry.npmjs.org", "github.com"] as const;

/**
 * The model API hosts of the built-in agents (and of registry agents named after them: `claude-acp`,
 * `codex-acp`): what an allowlist needs for the agent to think at all. An agent not listed gets none.
 */
const MODEL_HOSTS: [prefix: string, hosts: string[]][] = [
  ["claude", ["api.anthropic.com"]],
  ["codex", ["api.openai.com", "chatgpt.com"]],
  ["gemini", ["generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"]],
  ["opencode", ["api.anthropic.com", "api.openai.com", "opencode.ai"]],
  ["pi", ["api.anthropic.com", "api.openai.com"]],
  ["amp", ["ampcode.com"]],
];

export function agentModelHosts(agent: string): string[] {
  const found = MODEL_HOSTS.find(([prefix]) => agent === prefix || agent.startsWith(`${prefix}-`));
  return found ? [...found[1]] : [];
}

/**
 * What an agent server gets when no rule matches (SECURITY.md, "Sandboxes"): unattended work writes its
 * folder only and reaches only its model, the npm registry and github.com; a person's own session keeps
 * today's rights (`full`, shown as such) until the team writes a rule for sessions.
 */
export function defaultSandbox(agent: string, origin: WorkOrigin): SandboxSpec {
  if (origin === "session") return { profile: "full", network: { mode: "open", allow: [] }, denyRead: [] };
  return { profile: "workspace", network: { mode: "allowlist", allow: unique([...agentModelHosts(agent), ...COMMON_HOSTS]) }, denyRead: [] };
}

/** Where an agent server starts: what the rules match on. */
export const SandboxContext = resource("SandboxContext", { agent: AgentId, machine: Identifier, origin: WorkOrigin });
export type SandboxContext = z.infer<typeof SandboxContext>;

/** What the team's rules ask for one agent server, and which rule decided (null: the origin's default). */
export const SandboxVerdict = resource("SandboxVerdict", {
  origin: WorkOrigin,
  requested: SandboxSpec.describe("what the worker asks the machine for"),
  rule: z.number().int().nullable().describe("the deciding rule's index in the policy's `sandbox` (null: none matched, the default)"),
  ruleName: z.string().nullable().describe("the rule's name, or `sandbox rule <n>` (1-based); null: the origin's default"),
});
export type SandboxVerdict = z.infer<typeof SandboxVerdict>;

function matches(match: SandboxMatch, context: SandboxContext): boolean {
  if (match.agents && !match.agents.includes(context.agent)) return false;
  if (match.machines && !match.machines.includes(context.machine)) return false;
  if (match.origins && !match.origins.includes(context.origin)) return false;
  return true;
}

function specOf(rule: SandboxRule, agent: string): SandboxSpec {
  const allow = rule.network.mode === "allowlist" && rule.agentHosts ? unique([...rule.network.allow, ...agentModelHosts(agent)]) : [...rule.network.allow];
  return { profile: rule.profile, network: { mode: rule.network.mode, allow }, denyRead: [...rule.denyRead] };
}

/** The first matching rule decides; none matching gives the origin's default. */
export function decideSandbox(rules: readonly SandboxRule[] | undefined, context: SandboxContext): SandboxVerdict {
  const index = (rules ?? []).findIndex((r) => matches(r.match, context));
  const rule = index >= 0 ? rules![index]! : null;
  return {
    origin: context.origin,
    requested: rule ? specOf(rule, context.agent) : defaultSandbox(context.agent, context.origin),
    rule: rule ? index : null,
    ruleName: rule ? (rule.name ?? `sandbox rule ${index + 1}`) : null,
  };
}

/**
 * What a session's record keeps of its sandbox: what was asked and why, and what the machine enforces
 * (the stricter of the request and the owner's floor) when the machine said its floor. A restart asks
 * for `requested` again, never a newer decision.
 */
export const SessionSandbox = SandboxVerdict.extend({
  effective: SandboxSpec.nullable().describe("the stricter of `requested` and the machine's floor (null: the machine did not say its floor)"),
}).meta({ id: "SessionSandbox" });
export type SessionSandbox = z.infer<typeof SessionSandbox>;

function unique(hosts: string[]): string[] {
  const seen = new Set<string>();
  return hosts.filter((h) => {
    const key = h.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
