/**
 * The team's permission policy (docs/architecture.md, "The permission policy"): the fourth team document.
 * Rules in order; the first whose `match` holds decides an agent's `session/request_permission`: allow or
 * deny it at once (a person is never asked), or ask a person, optionally with a deadline that answers for
 * them. No rule matching means ask, as without a policy. The worker alone holds it: no sidecar applies it.
 */
import { z } from "zod";
import { WorkOrigin } from "./sandbox";
import { SandboxRule, SandboxVerdict } from "./sandbox-rules";
import { AgentId, CONTROL_CHARS, Identifier } from "./values";
import { resource, strictResource } from "./resource";
import { machineStatus } from "./team-documents";

/** ACP's `ToolKind`: what a tool call does, as the agent says in its request. */
export const TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"] as const;
export const ToolKind = z.enum(TOOL_KINDS);
export type ToolKind = z.infer<typeof ToolKind>;

export const DECISIONS = ["allow", "deny", "ask"] as const;
export type PolicyDecision = (typeof DECISIONS)[number];

const Pattern = (what: string) =>
  z
    .string()
    .min(1)
    .max(512)
    .refine((v) => !CONTROL_CHARS.test(v), `a ${what} must not contain control characters`);

export const PolicyMatch = strictResource("PolicyMatch", {
  agents: z.array(AgentId).min(1).max(64).optional().describe("the agents it applies to (any, when absent)"),
  machines: z.array(Identifier).min(1).max(256).optional().describe("the machines it applies to (any, when absent)"),
  kinds: z.array(ToolKind).min(1).max(TOOL_KINDS.length).optional().describe("the tool call's kind, as the agent gives it (ACP ToolKind)"),
  commands: z
    .array(Pattern("command pattern"))
    .min(1)
    .max(64)
    .optional()
    .describe(
      "patterns on the command an execute tool runs, `*` matching any characters: `npm test`, `npm run *`, `rm -rf *`. A command chained with `&&`, `;`, `|` is matched a part at a time (see docs/policy-and-sandboxes.md)",
    ),
  paths: z
    .array(Pattern("path glob"))
    .min(1)
    .max(64)
    .optional()
    .describe("globs on the paths the tool call touches, relative to the session's folder (`src/**`, `*.md`); a glob starting with `/` matches absolute paths"),
  outsideFolder: z.boolean().optional().describe("true: the tool call touches a path outside the session's folder; false: every path it names is inside"),
});
export type PolicyMatch = z.infer<typeof PolicyMatch>;

/** How long a person may be given to answer: 5 s to 7 days (an ask's deadline, a question's). */
const AnswerSeconds = z
  .number()
  .int()
  .min(5)
  .max(7 * 86_400);

export const AskTimeout = z
  .object({
    timeoutSeconds: AnswerSeconds.describe("how long a person has to answer"),
    onTimeout: z.enum(["allow", "deny"]).describe("the answer given when nobody did in time"),
  })
  .strict();

export const PolicyRule = z
  .object({
    name: z.string().min(1).max(80).optional().describe("how the transcript and the audit log name the rule (else its number)"),
    match: PolicyMatch.default({}),
    decision: z.enum(DECISIONS),
    ask: AskTimeout.optional().describe("only with decision ask: answer for the person when nobody did in time"),
  })
  .strict()
  .refine((rule) => rule.ask === undefined || rule.decision === "ask", { message: "`ask` goes only with decision ask", path: ["ask"] })
  .meta({ id: "PolicyRule" });
export type PolicyRule = z.infer<typeof PolicyRule>;

export const PermissionPolicy = strictResource("PermissionPolicy", {
  rules: z.array(PolicyRule).max(200).describe("in order: the first that matches decides; none matching means ask"),
});
export type PermissionPolicy = z.infer<typeof PermissionPolicy>;

/**
 * The team's policy document: the permission rules (what an agent asks) and the sandbox rules
 * (sandbox-rules.ts: what it can do at all). A session's or a task's own policy is a PermissionPolicy:
 * it never names a sandbox. A document stored before sandbox rules existed has no `sandbox`: the
 * origins' defaults apply.
 */
/**
 * The deadline on agents' questions (elicitation/create): one nobody answered in time is answered `cancel`,
 * as ACP has a client say that the person did not answer. Without it a question waits, as an ask without
 * a deadline does.
 */
export const QuestionTimeout = strictResource("QuestionTimeout", {
  timeoutSeconds: AnswerSeconds.describe("how long a person has to answer an agent's question before it is answered `cancel`"),
});
export type QuestionTimeout = z.infer<typeof QuestionTimeout>;

export const TeamPolicy = strictResource("TeamPolicy", {
  rules: PermissionPolicy.shape.rules,
  questions: QuestionTimeout.optional().describe("a deadline on agents' questions (elicitations); none: a question waits for a person"),
  sandbox: z
    .array(SandboxRule)
    .max(200)
    .optional()
    .describe("sandbox rules, in order: the first that matches an agent server's start decides its sandbox; none matching means its origin's default"),
});
export type TeamPolicy = z.infer<typeof TeamPolicy>;

/** What the status of the policy says of a machine: the version its object holds (nothing is applied on the machine). */
export const PolicyMachineStatus = machineStatus("PolicyMachineStatus", { version: "the policy version (ETag) this machine's object evaluates" }, {});
export type PolicyMachineStatus = z.infer<typeof PolicyMachineStatus>;

/** What a permission request carries that rules match on, read from the request itself. */
export const PermissionFacts = resource("PermissionFacts", {
  kind: ToolKind.nullable().describe("the tool call's kind, if the agent gave one"),
  title: z.string().max(500),
  command: z.string().max(8192).nullable().describe("the command an execute tool runs, where the agent gives it"),
  paths: z.array(z.string().max(4096)).max(64).describe("the paths the tool call names, as given (absolute, or relative to the folder)"),
});
export type PermissionFacts = z.infer<typeof PermissionFacts>;

/** Where a request was asked: the rules' `agents`, `machines` and paths are matched against these. */
export const PermissionContext = resource("PermissionContext", {
  agent: AgentId,
  machine: Identifier,
  cwd: z.string().min(1).max(4096).describe("the session's folder"),
});
export type PermissionContext = z.infer<typeof PermissionContext>;

/** What a policy did with a request: the decision, and the rule that made it (null: none matched, so ask). */
export const PolicyVerdict = resource("PolicyVerdict", {
  decision: z.enum(DECISIONS),
  rule: z.number().int().nullable().describe("the deciding rule's index in its policy"),
  ruleName: z.string().nullable().describe("the rule's name, or `rule <n>` (1-based)"),
  source: z.enum(["team", "session"]).describe("whose policy decided"),
  ask: AskTimeout.nullable(),
});
export type PolicyVerdict = z.infer<typeof PolicyVerdict>;

/** `POST /v1/config/policy/test`: a sample request, and optionally a policy to try instead of the team's. */
export const PolicyTest = strictResource("PolicyTest", {
  request: z.object({
    agent: AgentId,
    machine: Identifier,
    cwd: z.string().min(1).max(4096),
    kind: ToolKind.nullable().default(null),
    title: z.string().max(500).default(""),
    command: z.string().max(8192).nullable().default(null),
    paths: z.array(z.string().max(4096)).max(64).default([]),
    origin: WorkOrigin.default("session").describe("where the work comes from: the sandbox an agent server started for it gets"),
  }),
  policy: TeamPolicy.optional().describe("a draft to try (the team's stored policy when absent)"),
  sessionPolicy: PermissionPolicy.optional().describe("a session's or a task's own, tried on top of it"),
});
export type PolicyTest = z.infer<typeof PolicyTest>;

/** What the tester answers: the permission verdict, and the sandbox an agent server of that agent, machine and origin gets. */
export const PolicyTestResult = PolicyVerdict.extend({
  sandbox: SandboxVerdict.describe("what the team's sandbox rules ask for an agent server started there (the machine's floor may make it stricter)"),
}).meta({ id: "PolicyTestResult" });
export type PolicyTestResult = z.infer<typeof PolicyTestResult>;
