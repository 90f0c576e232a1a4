/**
 * The permission policy's rules as the dashboard edits them (docs/architecture.md, "The permission
 * policy"): a rule in a line of words, and a rule from the fields of its form. The worker checks what is
 * saved (a 400 says what is wrong); these only shape it.
 */
import type { PermissionPolicy, PolicyRule, PolicyVerdict, ToolKind } from "@agent-runtime/protocol/policy";

export type Rule = PermissionPolicy["rules"][number];

/** A rule's form: lists as the text a person types (one per line, or separated by commas). */
export interface RuleForm {
  name: string;
  decision: PolicyRule["decision"];
  timeoutSeconds: string;
  onTimeout: "allow" | "deny";
  kinds: ToolKind[];
  commands: string;
  paths: string;
  agents: string;
  machines: string;
  outsideFolder: "any" | "inside" | "outside";
}

const listOf = (text: string, separator: RegExp): string[] =>
  text
    .split(separator)
    .map((v) => v.trim())
    .filter(Boolean);

export function ruleFromForm(form: RuleForm): Rule {
  const match: Rule["match"] = {};
  const agents = listOf(form.agents, /[,\s]+/);
  const machines = listOf(form.machines, /[,\s]+/);
  const commands = listOf(form.commands, /\n/);
  const paths = listOf(form.paths, /\n/);
  if (agents.length) match.agents = agents;
  if (machines.length) match.machines = machines;
  if (form.kinds.length) match.kinds = form.kinds;
  if (commands.length) match.commands = commands;
  if (paths.length) match.paths = paths;
  if (form.outsideFolder !== "any") match.outsideFolder = form.outsideFolder === "outside";
  const seconds = Number(form.timeoutSeconds);
  return {
    ...(form.name.trim() ? { name: form.name.trim() } : {}),
    match,
    decision: form.decision,
    ...(form.decision === "ask" && form.timeoutSeconds.trim() && Number.isFinite(seconds)
      ? { ask: { timeoutSeconds: seconds, onTimeout: form.onTimeout } }
      : {}),
  };
}

export function formOf(rule: Rule | null): RuleForm {
  const m = rule?.match ?? {};
  return {
    name: rule?.name ?? "",
    decision: rule?.decision ?? "ask",
    timeoutSeconds: rule?.ask ? String(rule.ask.timeoutSeconds) : "",
    onTimeout: rule?.ask?.onTimeout ?? "deny",
    kinds: [...(m.kinds ?? [])],
    commands: (m.commands ?? []).join("\n"),
    paths: (m.paths ?? []).join("\n"),
    agents: (m.agents ?? []).join(", "),
    machines: (m.machines ?? []).join(", "),
    outsideFolder: m.outsideFolder === undefined ? "any" : m.outsideFolder ? "outside" : "inside",
  };
}

/** What a rule matches, in words: "execute · commands rm * · outside the folder". */
export function matchText(rule: Rule): string {
  const m = rule.match ?? {};
  const parts = [
    m.kinds ? m.kinds.join(", ") : null,
    m.commands ? `commands ${m.commands.join(" | ")}` : null,
    m.paths ? `paths ${m.paths.join(", ")}` : null,
    m.outsideFolder === undefined ? null : m.outsideFolder ? "outside the folder" : "inside the folder",
    m.agents ? `agents ${m.agents.join(", ")}` : null,
    m.machines ? `machines ${m.machines.join(", ")}` : null,
  ].filter(Boolean);
  return parts.length ? parts.join(" · ") : "every request";
}

/** A rule's decision in words: "ask (deny after 300 s)". */
export function decisionText(rule: Rule): string {
  return rule.ask ? `${rule.decision} (${rule.ask.onTimeout} after ${rule.ask.timeoutSeconds} s)` : rule.decision;
}

/** A tester's verdict in words. */
export function verdictText(verdict: PolicyVerdict): string {
  if (verdict.rule === null) return "ask: no rule matches, so a person is asked";
  const by = `${verdict.ruleName}${verdict.source === "session" ? " of the session's policy" : ""}`;
  const after = verdict.ask ? `, ${verdict.ask.onTimeout} after ${verdict.ask.timeoutSeconds} s` : "";
  return `${verdict.decision} by ${by}${after}`;
}

/** The rules with the one at `index` moved by `by` places (up: -1), or unchanged at an end. */
export function moved<T>(rules: readonly T[], index: number, by: -1 | 1): T[] {
  const to = index + by;
  if (to < 0 || to >= rules.length) return [...rules];
  const next = [...rules];
  [next[index], next[to]] = [next[to]!, next[index]!];
  return next;
}
