/**
 * The audit trail (docs/architecture.md, "Trust"): every mutating call and every refused use of a
 * token is appended to the team's log, after the answer is known and off the answer's path.
 */
import type { Context, MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
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
  const entry: Omit<AuditEntry, "seq"> = {
    atMs: Date.now(),
    token: who.token,
    role: who.role,
    method: c.req.method,
    route: c.get("auditDetail") ? `${routeOf(c)} (${c.get("auditDetail")})` : routeOf(c),
    machine: typeof machine === "string" ? machine.slice(0, 128) : null,
    status: who.status,
  };
  c.executionCtx.waitUntil(teamStub(c.env).appendAudit(entry));
}

/**
 * After the handler: audit what changed something, and what was refused (403), whatever the method.
 * An ACP session is audited where it starts (the POST naming its agent) and ends (DELETE), not at every
 * message of the conversation; a message that fails is audited.
 */
export const auditTrail: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const status = c.res.status;
  if (READS.has(c.req.method) && status !== 403 && !c.get("auditRead")) return;
  if (c.get("auditQuiet") && status < 400) return;
  const identity = c.get("identity");
  recordAudit(c, { token: identity?.name ?? "(unknown)", role: identity?.role ?? null, status });
};
