/**
 * Logging agents in (docs/architecture.md, "Logins"): the ways an agent says it can be logged in (ACP's
 * `authMethods`), whether it is, and what a person sends to log it in. An agent's login is its machine's
 * business: values typed for an `env_var` method cross the tunnel once and are kept by the sidecar only.
 *
 * ACP's schema (SDK 2.4, schema 1.7) defines the `terminal` and `agent` methods; `env_var` (a method the
 * environment satisfies, as codex-acp's "Use OPENAI_API_KEY") is not in it, so its shape is defined here.
 */
import { z } from "zod";
import { JsonRpcId } from "./acp";
import { Process } from "./processes";
import { resource, strictResource } from "./resource";
import { jsonAs } from "./json";

export const LoginMethodType = z.enum(["terminal", "env_var", "agent"]).meta({ id: "LoginMethodType" });
export type LoginMethodType = z.infer<typeof LoginMethodType>;

export const LoginMethod = resource("LoginMethod", {
  id: z.string(),
  type: LoginMethodType.describe("terminal: a login command run in a terminal; env_var: values kept on the machine; agent: the agent's own flow"),
  name: z.string(),
  description: z.string().optional(),
  vars: z.array(z.string()).optional().describe("env_var: the variables the method needs"),
});
export type LoginMethod = z.infer<typeof LoginMethod>;

export const LoginState = z.enum(["logged_in", "needs_login", "unknown"]).meta({ id: "LoginState" });
export type LoginState = z.infer<typeof LoginState>;

/**
 * A page the agent's own login flow asks a person to open (ACP's `elicitation/create` in URL mode, scoped
 * to its `authenticate` request: there is no session yet). Answered with POST /v1/agents/{agent}/login/elicitation.
 */
export const LoginQuestion = resource("LoginQuestion", {
  requestId: JsonRpcId.describe("the JSON-RPC id of the agent's request"),
  method: z.string().describe("the login method whose flow asks"),
  atMs: z.number().int(),
  message: z.string(),
  url: z.string().describe("the page to open"),
  elicitationId: z.string(),
});
export type LoginQuestion = z.infer<typeof LoginQuestion>;

export const AgentLogin = resource("AgentLogin", {
  state: LoginState.describe("unknown: not asked of the agent yet, or it did not say"),
  methods: z.array(LoginMethod),
  logout: z.boolean().describe("the agent can log out (ACP's `logout`)"),
  stored: z.array(z.string()).describe("the names of the values kept on this machine for this agent (never the values)"),
  pending: LoginQuestion.nullable()
    .optional()
    .describe("the agent's own login flow waits for a person to open this page (then answer it: POST /v1/agents/{agent}/login/elicitation)"),
});
export type AgentLogin = z.infer<typeof AgentLogin>;

/** An environment variable's name. */
export const EnvVarName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name");

export const LoginRequest = strictResource("LoginRequest", {
  method: z.string().min(1).max(256).describe("the id of one of the agent's login methods"),
  values: z
    .record(
      EnvVarName,
      z
        .string()
        .min(1)
        .max(16 * 1024)
        .refine((v) => !v.includes("\u0000"), "must not contain NUL bytes"),
    )
    .optional()
    .describe("env_var: a value for each of the method's variables (kept on the machine only)"),
});
export type LoginRequest = z.infer<typeof LoginRequest>;

export const LoginStarted = resource("LoginStarted", {
  method: z.string(),
  type: LoginMethodType,
  state: LoginState.describe("the agent's login now (a terminal's or the agent's own flow is still going: needs_login until it ends)"),
  process: Process.optional().describe("terminal: the login's tty process (open its terminal, type with POST /v1/processes/{id}/input)"),
  started: z.array(z.string()).optional().describe("the sessions that waited for this login and started (a terminal's start them when it exits 0)"),
});
export type LoginStarted = z.infer<typeof LoginStarted>;

/** POST /v1/agents/{agent}/login/elicitation: the answer to the page the agent's own login flow asked a person to open. */
export const LoginAnswer = strictResource("LoginAnswer", {
  requestId: JsonRpcId.optional().describe("the pending question's id (default: the one the login waits on)"),
  action: z.enum(["accept", "decline", "cancel"]).describe("accept: the page was opened and the login finished there"),
});
export type LoginAnswer = z.infer<typeof LoginAnswer>;

export const LoginRemoved = resource("LoginRemoved", {
  removed: z.array(z.string()).describe("the names of the values removed from the machine"),
  loggedOut: z.boolean().describe("the agent was asked to log out (ACP's `logout`) and did"),
  state: LoginState,
});
export type LoginRemoved = z.infer<typeof LoginRemoved>;

// ---------------- what agents say (the ACP wire) ----------------

const Described = { id: z.string(), name: z.string(), description: z.string().nullish() };
const TerminalMethod = z
  .object({ type: z.literal("terminal"), ...Described, args: z.array(z.string()).nullish(), env: z.record(z.string(), z.string()).nullish() })
  .passthrough();
const EnvVarMethod = z.object({ type: z.literal("env_var"), ...Described, vars: z.array(z.object({ name: z.string() }).passthrough()) }).passthrough();
/** ACP: a method without a `type` is the agent's own (`authenticate` with its id). */
const AgentMethod = z.object({ type: z.literal("agent").optional(), ...Described }).passthrough();
const AcpAuthMethod = z.union([TerminalMethod, EnvVarMethod, AgentMethod]);

/** A terminal method's command line additions: appended to the agent's own command (ACP's terminal auth). */
export interface TerminalLaunch {
  args: string[];
  env: Record<string, string>;
}

export interface AuthMethodsOf {
  methods: LoginMethod[];
  terminal: Map<string, TerminalLaunch>;
  logout: boolean;
}

const InitializeAuth = z
  .object({
    authMethods: z.array(z.unknown()).nullish(),
    agentCapabilities: z
      .object({ auth: z.object({ logout: z.unknown().optional() }).passthrough().nullish() })
      .passthrough()
      .nullish(),
  })
  .passthrough();

/** The login methods an agent's `initialize` answer offers (a method this runtime cannot read is left out). */
export function authMethodsOf(initializeResult: unknown): AuthMethodsOf {
  const parsed = InitializeAuth.safeParse(initializeResult);
  const found: AuthMethodsOf = { methods: [], terminal: new Map(), logout: false };
  if (!parsed.success) return found;
  found.logout = parsed.data.agentCapabilities?.auth?.logout != null;
  for (const raw of parsed.data.authMethods ?? []) {
    const method = AcpAuthMethod.safeParse(raw);
    if (!method.success) continue;
    const m = method.data;
    const base = { id: m.id, name: m.name, ...(m.description ? { description: m.description } : {}) };
    if (m.type === "terminal") {
      found.methods.push({ ...base, type: "terminal" });
      found.terminal.set(m.id, { args: m.args ?? [], env: m.env ?? {} });
    } else if (m.type === "env_var") found.methods.push({ ...base, type: "env_var", vars: m.vars.map((v) => v.name) });
    else found.methods.push({ ...base, type: "agent" });
  }
  return found;
}

/** ACP's `auth_required` error code (the SDK's RequestError.authRequired). */
export const AUTH_REQUIRED_CODE = -32000;

const ErrorAnswer = z.object({ error: z.object({ code: z.number() }).passthrough() }).passthrough();

/** Does this answer (the agent's JSON text) say the agent must be logged in first? */
export function isAuthRequired(body: string): boolean {
  return jsonAs(body, ErrorAnswer)?.error.code === AUTH_REQUIRED_CODE;
}
