/**
 * Evaluating the permission policy (docs/architecture.md, "The permission policy"): pure functions, so the
 * machine's object, `POST /v1/config/policy/test` and the dashboard's tester answer alike. A rule matches
 * when every field it sets holds; within a field, any entry may. What is matched is only what the request
 * itself carries, so every reader of a stream reaches the same verdict for the same request.
 */
import { z } from "zod";
import type { PermissionContext, PermissionFacts, PermissionPolicy, PolicyDecision, PolicyRule, PolicyVerdict, ToolKind } from "./policy";
import { TOOL_KINDS } from "./policy";
import { commandPatternTest, globTest, WorkBudget, WorkExhausted } from "./wildcard";

const SEVERITY: Record<PolicyDecision, number> = { allow: 0, ask: 1, deny: 2 };

const RawInput = z.record(z.string(), z.unknown());
const RequestParams = z
  .object({
    toolCall: z
      .object({
        kind: z.string().nullish(),
        title: z.string().nullish(),
        rawInput: z.unknown().optional(),
        locations: z.array(z.object({ path: z.string() }).passthrough()).nullish(),
      })
      .passthrough(),
  })
  .passthrough();

/** Keys under which agents put the file a tool touches in its raw input (Claude Code, Codex, Gemini CLI, OpenCode). */
const PATH_KEYS = ["file_path", "filePath", "path", "notebook_path", "absolute_path"];

/** What a `session/request_permission`'s params carry that rules match on (nothing when it carries no tool call). */
export function permissionFactsOf(params: unknown): PermissionFacts {
  const parsed = RequestParams.safeParse(params);
  if (!parsed.success) return { kind: null, title: "", command: null, paths: [] };
  const call = parsed.data.toolCall;
  const raw = RawInput.safeParse(call.rawInput);
  const input = raw.success ? raw.data : {};
  const kind = (TOOL_KINDS as readonly string[]).includes(call.kind ?? "") ? (call.kind as ToolKind) : null;
  const paths = [...(call.locations ?? []).map((l) => l.path), ...PATH_KEYS.map((k) => input[k]).filter((p): p is string => typeof p === "string")];
  return { kind, title: (call.title ?? "").slice(0, 500), command: commandOf(input.command), paths: [...new Set(paths)].slice(0, 64) };
}

/** A command as a string: `["bash", "-lc", "npm test"]` is the script it runs; any other list, its words. */
function commandOf(command: unknown): string | null {
  if (typeof command === "string") return command.slice(0, 8192);
  if (!Array.isArray(command) || !command.every((w) => typeof w === "string")) return null;
  const words = command as string[];
  if (words.length === 3 && /(^|\/)(ba|z|da)?sh$/.test(words[0]!) && /^-l?c$/.test(words[1]!)) return words[2]!.slice(0, 8192);
  return words.join(" ").slice(0, 8192);
}

/** `a/./b/../c` → `a/c`; a leading `/` kept. Paths are POSIX here (machines' Windows paths are matched as given). */
function normalize(path: string): string {
  const absolute = path.startsWith("/");
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length > 0 && parts.at(-1) !== "..") parts.pop();
      else if (!absolute) parts.push("..");
    } else parts.push(part);
  }
  return (absolute ? "/" : "") + parts.join("/");
}

/**
 * Where a path is: absolute (`null`: not known here) and relative to the session's folder (`null`: outside it,
 * or not known to be inside).
 */
interface Place {
  absolute: string | null;
  relative: string | null;
}

/**
 * Paths a shell expands before the command sees them: `~`, `~user`, `$HOME`, `${HOME}`, any variable. Where
 * they lead is the machine's to say, not the request's, so they are never judged inside the folder (a
 * relative `~/.bashrc` would otherwise be), and no absolute glob is known to cover them.
 */
const EXPANDED = /^[~$]/;

/** A path named by a request, absolute and relative to the session's folder. */
function placeOf(path: string, cwd: string): Place {
  if (EXPANDED.test(path.trimStart())) return { absolute: null, relative: null };
  const folder = normalize(cwd);
  const absolute = normalize(path.startsWith("/") ? path : `${folder}/${path}`);
  if (absolute === folder) return { absolute, relative: "." };
  const prefix = folder === "/" ? "/" : `${folder}/`;
  return { absolute, relative: absolute.startsWith(prefix) ? absolute.slice(prefix.length) : null };
}

/** Shell operators that run another command: each part of a chained command is matched on its own. */
const CHAIN = /&&|\|\||[;|&\n]/;
/** What a pattern cannot see into: a command inside another. An allow rule never matches a command holding one. */
const SUBSTITUTION = /\$\(|`|<\(|>\(/;

/**
 * What the rules look at, worked out once per evaluation and paid for once: a command's parts, each path's
 * place. Rules then spend only on their own patterns.
 */
class Prepared {
  private split?: { whole: string; parts: string[] };
  private placed?: Place[];
  constructor(
    readonly facts: PermissionFacts,
    private readonly cwd: string,
    readonly budget: WorkBudget,
  ) {}

  command(command: string): { whole: string; parts: string[] } {
    if (!this.split) {
      this.budget.spend(command.length);
      const whole = command.trim();
      const parts = whole
        .split(CHAIN)
        .map((p) => p.trim())
        .filter((p) => p.length > 0);
      this.split = { whole, parts };
    }
    return this.split;
  }

  places(): Place[] {
    if (!this.placed) {
      this.budget.spend(this.facts.paths.reduce((sum, p) => sum + p.length, this.cwd.length));
      this.placed = this.facts.paths.map((p) => placeOf(p, this.cwd));
    }
    return this.placed;
  }
}

/**
 * Does the command match? For an allow every part of a chained command must match some pattern (so
 * `npm test && rm -rf ~` is not allowed by `npm test*`); for deny and ask any part (or the whole) may.
 */
function commandMatches(request: Prepared, command: string, patterns: string[], decision: PolicyDecision): boolean {
  const { budget } = request;
  const { whole, parts } = request.command(command);
  // Linear-time matchers (./wildcard.ts), on a budget: a pattern here may be written by someone (a viewer's
  // draft, a member's session policy) who must not be able to stall the machine's object.
  const matches = (part: string) => patterns.some((pattern) => commandPatternTest(pattern)(part, budget));
  if (decision === "allow") return !SUBSTITUTION.test(whole) && parts.length > 0 && parts.every(matches);
  return matches(whole) || parts.some(matches);
}

function pathsMatch(request: Prepared, globs: string[], decision: PolicyDecision): boolean {
  const places = request.places();
  if (places.length === 0) return false;
  const { budget } = request;
  const matches = (place: Place) =>
    globs.some((glob) =>
      glob.startsWith("/")
        ? // A path that is not known (`~/…`, `$HOME/…`) may be the one an absolute glob names: an allow does not
          // cover it, a deny or an ask does.
          place.absolute === null
          ? decision !== "allow"
          : globTest(glob)(place.absolute, budget)
        : // The folder itself (`.`) is no name a relative glob could mean.
          place.relative !== null && place.relative !== "." && globTest(glob)(place.relative, budget),
    );
  // An allow covers a request only when it covers every path it names; a deny or an ask, any of them.
  return decision === "allow" ? places.every(matches) : places.some(matches);
}

/**
 * How much matching one request may do (the team's policy and the session's together), in steps (a character looked at, a glob's state followed
 * on one character): far more than policies people write need (a glob usually fails on its first characters;
 * a globstar glob on a 100-character path costs some hundreds), and a few milliseconds at worst (bench/README.md).
 */
export const POLICY_WORK_STEPS = 2_000_000;

/**
 * Does the rule match? When the policy has used up its work (thousands of patterns against long inputs, made to
 * be slow), the rule is judged the stricter way: an allow does not match, a deny or an ask does.
 */
function ruleMatches(rule: PolicyRule, request: Prepared, context: PermissionContext): boolean {
  try {
    return ruleHolds(rule, request, context);
  } catch (error) {
    if (error instanceof WorkExhausted) return rule.decision !== "allow";
    throw error;
  }
}

function ruleHolds(rule: PolicyRule, request: Prepared, context: PermissionContext): boolean {
  const m = rule.match;
  const { facts } = request;
  if (m.agents && !m.agents.includes(context.agent)) return false;
  if (m.machines && !m.machines.includes(context.machine)) return false;
  if (m.kinds && (facts.kind === null || !m.kinds.includes(facts.kind))) return false;
  if (m.commands && (facts.command === null || !commandMatches(request, facts.command, m.commands, rule.decision))) return false;
  if (m.paths && !pathsMatch(request, m.paths, rule.decision)) return false;
  if (m.outsideFolder !== undefined) {
    const places = request.places();
    if (places.length === 0) return false;
    const outside = places.some((p) => p.relative === null);
    if (outside !== m.outsideFolder) return false;
  }
  return true;
}

/** The first rule of a policy that matches, as a verdict; null when none does. */
export function evaluatePolicy(
  policy: PermissionPolicy,
  facts: PermissionFacts,
  context: PermissionContext,
  source: PolicyVerdict["source"],
  budget = new WorkBudget(POLICY_WORK_STEPS),
): PolicyVerdict | null {
  const request = new Prepared(facts, context.cwd, budget);
  const index = policy.rules.findIndex((rule) => ruleMatches(rule, request, context));
  if (index < 0) return null;
  const rule = policy.rules[index]!;
  return { decision: rule.decision, rule: index, ruleName: rule.name ?? `rule ${index + 1}`, source, ask: rule.ask ?? null };
}

export const NO_RULE: PolicyVerdict = { decision: "ask", rule: null, ruleName: null, source: "team", ask: null };

/**
 * The team's policy and a session's own together. The session's decides what the team's leaves open and may
 * tighten what a team rule allows; it never loosens a team rule's deny or ask.
 */
export function decidePermission(team: PermissionPolicy, session: PermissionPolicy | null, facts: PermissionFacts, context: PermissionContext): PolicyVerdict {
  // One allowance for both: whatever either could not afford is judged the stricter way, so sharing it never
  // lets a session's policy loosen anything.
  const budget = new WorkBudget(POLICY_WORK_STEPS);
  const byTeam = evaluatePolicy(team, facts, context, "team", budget);
  const bySession = session ? evaluatePolicy(session, facts, context, "session", budget) : null;
  if (!byTeam) return bySession ?? NO_RULE;
  if (!bySession) return byTeam;
  return SEVERITY[bySession.decision] > SEVERITY[byTeam.decision] ? bySession : byTeam;
}

const OPTION_KINDS: Record<"allow" | "deny", string[]> = { allow: ["allow_once", "allow_always"], deny: ["reject_once", "reject_always"] };

/**
 * How the runtime answers for the policy: the agent's own allow-once (or reject-once) option, the
 * always form only when the agent offers no once form. Null when the agent offers no option of that sort
 * (an allow then goes to a person; a deny is answered `cancelled`).
 */
export function policyOptionOf(decision: "allow" | "deny", options: { optionId: string; kind: string }[]): string | null {
  for (const kind of OPTION_KINDS[decision]) {
    const option = options.find((o) => o.kind === kind);
    if (option) return option.optionId;
  }
  return null;
}
