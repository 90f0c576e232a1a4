/**
 * Sandboxes as the dashboard shows and edits them (docs/architecture.md, "Sandboxes: the team's rules"):
 * a session's sandbox in words, a block the machine reported, and the team's sandbox rules as forms. The
 * worker checks what is saved (a 400 says what is wrong); these only shape it.
 */
import type { TeamPolicy } from "@agent-runtime/protocol/policy";
import type { SandboxSpec, WorkOrigin } from "@agent-runtime/protocol/sandbox";
import type { SandboxVerdict, SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import type { TranscriptEntry } from "@agent-runtime/protocol/sessions";

export type SandboxRule = NonNullable<TeamPolicy["sandbox"]>[number];

const ORIGIN_WORDS: Record<WorkOrigin, string> = { session: "a person's session", task: "a task", schedule: "a schedule's task", trigger: "a trigger's task" };

/** A spec in a few words: "workspace · allowlist (3 hosts)"; `full` is said as what it is. */
export function specText(spec: SandboxSpec): string {
  const profile = spec.profile === "full" ? "full (no sandbox)" : spec.profile;
  const network =
    spec.network.mode === "allowlist"
      ? `allowlist (${spec.network.allow.length} ${spec.network.allow.length === 1 ? "host" : "hosts"})`
      : spec.network.mode === "none"
        ? "no network"
        : "open network";
  return `${profile} · ${network}`;
}

/** What the badge says: what the machine enforces where known, else what was asked. */
export function badgeOf(sandbox: SessionSandbox | null): { text: string; profile: string } {
  if (!sandbox) return { text: "sandbox unknown", profile: "unknown" };
  const spec = sandbox.effective ?? sandbox.requested;
  return { text: specText(spec), profile: spec.profile };
}

/** Why: which rule asked for it, and what the machine makes of it. */
export function sandboxDetail(sandbox: SessionSandbox): string {
  const why = sandbox.ruleName ? `asked by the team's rule "${sandbox.ruleName}"` : `the default for ${ORIGIN_WORDS[sandbox.origin]}`;
  const hosts = (sandbox.effective ?? sandbox.requested).network;
  const listed = hosts.mode === "allowlist" ? `; reaches only ${hosts.allow.join(", ") || "nothing"}` : "";
  const enforced = sandbox.effective
    ? `the machine enforces ${specText(sandbox.effective)}${specText(sandbox.effective) === specText(sandbox.requested) ? "" : ` (its owner's floor; asked: ${specText(sandbox.requested)})`}`
    : "the machine did not say its floor";
  return `${why}; ${enforced}${listed}`;
}

/** A verdict of the policy tester in words. */
export function sandboxVerdictText(verdict: SandboxVerdict): string {
  return `sandbox: ${specText(verdict.requested)}, ${verdict.ruleName ? `by ${verdict.ruleName}` : `the default for ${ORIGIN_WORDS[verdict.origin]}`}${
    verdict.requested.network.mode === "allowlist" ? ` (${verdict.requested.network.allow.join(", ") || "no host"})` : ""
  }`;
}

/** A block the machine reported (a `sandbox` transcript entry) in words: "blocked: connection to evil.example:443". */
export function blockText(entry: TranscriptEntry): string {
  const d = entry.data ?? {};
  const kind = typeof d.kind === "string" ? d.kind : "";
  const target = typeof d.target === "string" ? d.target : "?";
  const detail = typeof d.detail === "string" && d.detail ? ` (${d.detail})` : "";
  const what = kind === "network" ? "connection to" : kind === "read" ? "read of" : kind === "write" ? "write to" : "access to";
  return `blocked by the sandbox: ${what} ${target}${detail}`;
}

/** A sandbox rule's form: lists as the text a person types. */
export interface SandboxRuleForm {
  name: string;
  origins: WorkOrigin[];
  agents: string;
  machines: string;
  profile: SandboxSpec["profile"];
  network: SandboxSpec["network"]["mode"];
  allow: string;
  agentHosts: boolean;
  denyRead: string;
}

const listOf = (text: string, separator: RegExp): string[] =>
  text
    .split(separator)
    .map((v) => v.trim())
    .filter(Boolean);

export function sandboxFormOf(rule: SandboxRule | null): SandboxRuleForm {
  const m = rule?.match ?? {};
  return {
    name: rule?.name ?? "",
    origins: [...(m.origins ?? [])],
    agents: (m.agents ?? []).join(", "),
    machines: (m.machines ?? []).join(", "),
    profile: rule?.profile ?? "workspace",
    network: rule?.network.mode ?? "allowlist",
    allow: (rule?.network.allow ?? []).join("\n"),
    agentHosts: rule?.agentHosts ?? true,
    denyRead: (rule?.denyRead ?? []).join("\n"),
  };
}

export function sandboxRuleFromForm(form: SandboxRuleForm): SandboxRule {
  const match: SandboxRule["match"] = {};
  const agents = listOf(form.agents, /[,\s]+/);
  const machines = listOf(form.machines, /[,\s]+/);
  if (agents.length) match.agents = agents;
  if (machines.length) match.machines = machines;
  if (form.origins.length) match.origins = [...form.origins];
  return {
    ...(form.name.trim() ? { name: form.name.trim() } : {}),
    match,
    profile: form.profile,
    network: { mode: form.network, allow: form.network === "allowlist" ? listOf(form.allow, /[\n,\s]+/) : [] },
    agentHosts: form.agentHosts,
    denyRead: listOf(form.denyRead, /\n/),
  };
}

/** What a sandbox rule matches, in words. */
export function sandboxMatchText(rule: SandboxRule): string {
  const m = rule.match ?? {};
  const parts = [
    m.origins ? m.origins.map((o) => ORIGIN_WORDS[o]).join(", ") : null,
    m.agents ? `agents ${m.agents.join(", ")}` : null,
    m.machines ? `machines ${m.machines.join(", ")}` : null,
  ].filter(Boolean);
  return parts.length ? parts.join(" · ") : "every agent server";
}

/** What a sandbox rule gives, in words (with the hosts it lists). */
export function sandboxRuleText(rule: SandboxRule): string {
  const hosts = rule.network.mode === "allowlist" ? `: ${[...rule.network.allow, ...(rule.agentHosts ? ["the agent's model API"] : [])].join(", ")}` : "";
  const denied = rule.denyRead.length ? ` · never reads ${rule.denyRead.join(", ")}` : "";
  return `${specText({ profile: rule.profile, network: rule.network, denyRead: rule.denyRead })}${hosts}${denied}`;
}

export const WORK_ORIGIN_WORDS = ORIGIN_WORDS;
