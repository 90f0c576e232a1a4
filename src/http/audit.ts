/**
 * The audit trail (docs/architecture.md, "Trust"): every mutating call and every refused use of a
 * token is appended to the team's log, after the answer is known and off the answer's path.
 */
import type { Context, MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { teamStub } from "../durable/stubs";
import type { AppEnv, Env } from "../env";
import type { AuditEntry } from "@agent-runtime/protocol/trust";

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The route pattern as the API documents it (`/v1/processes/{id}`), never the concrete path with its values. */
function routeOf(c: Context<AppEnv>): string {
  const pattern = routePath(c, -1);
  const path = pattern && pattern !== "*" && !pattern.endsWith("/*") ? pattern : new URL(c.req.url).pathname;
  return path.replace(/:([A-Za-z_]+)/g, "{$1}");
}

export function recordAudit(c: Context<AppEnv>, who: { token: string; role: AuditEntry["role"]; status: number }): void {
  const machine = c.get("machine") ?? c.req.param("machine") ?? null;
  const route = c.get("auditDetail") ? `${routeOf(c)} (${c.get("auditDetail")})` : routeOf(c);
  appendAudit(c.env, c.executionCtx, { ...who, method: c.req.method, route, machine: typeof machine === "string" ? machine : null });
}

/** One line of the team's log, appended off the answer's path (the relay's message before Hono writes it here too: http/relay-post.ts). */
export function appendAudit(
  env: Env,
  executionCtx: Pick<ExecutionContext, "waitUntil">,
  line: { token: string; role: AuditEntry["role"]; status: number; method: string; route: string; machine: string | null },
): void {
  const entry: Omit<AuditEntry, "seq"> = {
    atMs: Date.now(),
    token: line.token,
    role: line.role,
    method: line.method,
    route: line.route,
    machine: line.machine === null ? null : line.machine.slice(0, 128),
    status: line.status,
  };
  executionCtx.waitUntil(teamStub(env).appendAudit(entry));
}

/**
 * Whether an answer is audited: what changed something, and what was refused (403), whatever the method.
 * An ACP session is audited where it starts (the POST naming its agent) and ends (DELETE), not at every
 * message of the conversation (`quiet`); a message that fails is audited.
 */
export function audited(method: string, status: number, read: boolean, quiet: boolean): boolean {
  if (READS.has(method) && status !== 403 && !read) return false;
  return !(quiet && status < 400);
}

/** After the handler: the answer audited where `audited` says so. */
export const auditTrail: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const status = c.res.status;
  if (!audited(c.req.method, status, c.get("auditRead") === true, c.get("auditQuiet") === true)) return;
  const identity = c.get("identity");
  recordAudit(c, { token: identity?.name ?? "(unknown)", role: identity?.role ?? null, status });
};
