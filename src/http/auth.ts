/**
 * Who is calling (docs/architecture.md, "Trust"). A request proves it with one of:
 *  - `Authorization: Bearer <API_TOKEN>`: the bootstrap admin, a worker secret;
 *  - `Authorization: Bearer art.<id>.<secret>`: an issued token, checked by that token's own Durable Object;
 *  - `?access_token=<ticket>` on a WebSocket or SSE GET: a one-minute ticket from POST /v1/tickets (http/tickets.ts);
 *  - `Cf-Access-Jwt-Assertion` when Cloudflare Access is configured: the email's role from CF_ACCESS_ROLES.
 * Anything else is 401 with `WWW-Authenticate: Bearer`, and the refusal is audited.
 */
import type { Context, MiddlewareHandler } from "hono";
import { tokenStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import type { Identity } from "./access";
import { settings } from "../settings";
import { accessIdentity } from "./cf-access";
import { problem } from "./problem";
import { recordAudit } from "./audit";
import { apiTokenId, sha256Hex, timingSafeEqualText } from "./secrets";
import { isTicket, verifyTicket } from "./tickets";

/** The bearer token of a request, or null when the header is missing or not `Bearer <token>`. */
export function bearerToken(header: string | undefined | null): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(header);
  return match?.[1] ?? null;
}

/** Every configured API token is compared (in constant time), so timing says nothing about which one matched. */
export function isApiToken(configured: string[], presented: string | null): boolean {
  if (!presented) return false;
  let ok = false;
  for (const token of configured) {
    if (timingSafeEqualText(presented, token)) ok = true;
  }
  return ok;
}

export const BOOTSTRAP_ADMIN: Identity = { name: "API_TOKEN", role: "admin", machines: "*", tokenId: null, expiresAtMs: null };

type Verdict = { ok: true; identity: Identity } | { ok: false; detail: string; presented: string };

/**
 * Browsers cannot set headers on an EventSource or a WebSocket: for those GETs only (an SSE `Accept` or
 * a WebSocket upgrade), the token may come as `?access_token=`. It is never recorded (the audit log keeps
 * route patterns, not URLs) and is refused on every other request.
 */
function queryToken(c: Context<AppEnv>): string | null {
  if (c.req.method !== "GET") return null;
  const streaming = (c.req.header("accept") ?? "").includes("text/event-stream") || c.req.header("upgrade")?.toLowerCase() === "websocket";
  return streaming ? (c.req.query("access_token") ?? null) : null;
}

async function identify(c: Context<AppEnv>): Promise<Verdict> {
  const header = bearerToken(c.req.header("authorization"));
  const token = header ?? queryToken(c);
  if (token && isTicket(token)) {
    // A ticket opens a stream from a browser; as a bearer header it would be a token that never needed to exist.
    if (header) return { ok: false, detail: "a ticket is accepted only as ?access_token= on a WebSocket or SSE GET", presented: "(ticket)" };
    const verdict = await verifyTicket(settings(c.env).tunnelSecret, token);
    return verdict.ok ? verdict : { ok: false, detail: verdict.reason, presented: "(ticket)" };
  }
  if (token) {
    if (isApiToken(settings(c.env).apiTokens, token)) return { ok: true, identity: BOOTSTRAP_ADMIN };
    const id = apiTokenId(token);
    if (!id) return { ok: false, detail: "the bearer token is not valid", presented: "(unknown token)" };
    const check = await tokenStub(c.env, id).check(await sha256Hex(token), Date.now());
    if (!check.ok) {
      const detail = check.reason === "unknown" ? "the bearer token is not valid" : `the token '${check.name}' is ${check.reason}`;
      return { ok: false, detail, presented: check.name ?? `(unknown token ${id})` };
    }
    const t = check.token;
    return { ok: true, identity: { name: t.name, role: t.role, machines: t.machines, tokenId: t.id, expiresAtMs: t.expiresAtMs } };
  }
  const assertion = c.req.header("cf-access-jwt-assertion");
  const access = settings(c.env).access;
  if (assertion && access) {
    const verdict = await accessIdentity(access, assertion);
    return verdict.ok ? verdict : { ok: false, detail: verdict.detail, presented: verdict.presented };
  }
  return { ok: false, detail: "send 'Authorization: Bearer <token>'", presented: "(no token)" };
}

function unauthorized(detail: string, presented: boolean): Response {
  const res = problem("token_invalid", detail);
  res.headers.set("www-authenticate", presented ? 'Bearer realm="agent-runtime", error="invalid_token"' : 'Bearer realm="agent-runtime"');
  return res;
}

/** Sets `identity` for the rest of the request, or answers 401 (audited). */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const verdict = await identify(c);
  if (!verdict.ok) {
    const res = unauthorized(verdict.detail, verdict.presented !== "(no token)");
    recordAudit(c, { token: verdict.presented, role: null, status: res.status });
    return res;
  }
  c.set("identity", verdict.identity);
  await next();
};
