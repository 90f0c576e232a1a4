/**
 * Who is calling (docs/architecture.md, "Trust"). A request proves it with one of:
 *  - `Authorization: Bearer <API_TOKEN>`: the bootstrap admin, a worker secret;
 *  - `Authorization: Bearer art.<id>.<secret>`: an issued token, checked by that token's own Durable Object;
 *  - `?access_token=<ticket>` on a WebSocket or SSE GET: a one-minute ticket from POST /v1/tickets (http/tickets.ts);
 *  - `Cf-Access-Jwt-Assertion` when Cloudflare Access is configured: the email's role from CF_ACCESS_ROLES.
 * The header is read by `hono/bearer-auth`. Anything else is 401 (400 for a malformed header, RFC 6750) with
 * `WWW-Authenticate: Bearer`, and the refusal is audited.
 */
import type { Context, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { HTTPException } from "hono/http-exception";
import { tokenStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import type { Identity } from "./access";
import { settings } from "../settings";
import { accessIdentity } from "./cf-access";
import { problem } from "../lib/problem-response";
import { recordAudit } from "./audit";
import { apiTokenId, isOneOfSecrets, sha256Hex } from "../lib/secrets";
import { isTicket, verifyTicket } from "./tickets";
import { mayCarryQueryToken } from "./query-token";
import { cookieIdentity, CSRF_HEADER } from "./signin";
import { BOOTSTRAP_NAME } from "../lib/identity";
import { revocationAnsweredByMachine, verifiedTokens } from "./token-cache";

/** Every configured API token is compared (in constant time), so timing says nothing about which one matched. */
export function isApiToken(configured: string[], presented: string | null): boolean {
  return presented ? isOneOfSecrets(presented, configured) : false;
}

export const BOOTSTRAP_ADMIN: Identity = { name: BOOTSTRAP_NAME, role: "admin", machines: "*", tokenId: null, expiresAtMs: null };

export type Verdict = { ok: true; identity: Identity } | { ok: false; detail: string; presented: string };

const REALM = "agent-runtime";
const CHALLENGE = `Bearer realm="${REALM}"`;
const INVALID_TOKEN_CHALLENGE = `Bearer realm="${REALM}", error="invalid_token"`;

/**
 * Browsers cannot set headers on an EventSource or a WebSocket: for those GETs only (an SSE GET of a route
 * that streams, or a WebSocket upgrade of a route that takes one: http/query-token.ts), the token may
 * come as `?access_token=`. It is never recorded (the audit log keeps
 * route patterns, not URLs) and is refused on every other request.
 */
function queryToken(c: Context<AppEnv>): string | null {
  const streaming = mayCarryQueryToken({ method: c.req.method, url: c.req.url, accept: c.req.header("accept"), upgrade: c.req.header("upgrade") });
  return streaming ? (c.req.query("access_token") ?? null) : null;
}

/** Who a presented token is: a ticket (only from the query), the bootstrap API_TOKEN, or an issued token. */
async function verifyToken(c: Context<AppEnv>, token: string, from: "header" | "query"): Promise<Verdict> {
  if (from === "query" && isTicket(token)) return verifyTicketToken(c, token);
  let known = tokenAtOnce(settings(c.env).apiTokens, token, from === "header" && revocationAnsweredByMachine(c.req.method, c.req.path));
  if (known instanceof Promise) known = await known;
  if ("verdict" in known) return known.verdict;
  const { id, hash, now } = known.ask;
  const check = await tokenStub(c.env, id).check(hash, now);
  if (!check.ok) {
    verifiedTokens.forget(hash);
    const detail = check.reason === "unknown" ? "the bearer token is not valid" : `the token '${check.name}' is ${check.reason}`;
    return { ok: false, detail, presented: check.name ?? `(unknown token ${id})` };
  }
  const t = check.token;
  const identity: Identity = { name: t.name, role: t.role, machines: t.machines, tokenId: t.id, expiresAtMs: t.expiresAtMs };
  verifiedTokens.keep(hash, identity, now);
  return { ok: true, identity };
}

/** A ticket on a streaming GET's query: its signature and minute, and the token it was minted for not revoked. */
async function verifyTicketToken(c: Context<AppEnv>, token: string): Promise<Verdict> {
  const verdict = await verifyTicket(settings(c.env).tunnelSecret, token);
  if (!verdict.ok) return { ok: false, detail: verdict.reason, presented: "(ticket)" };
  // A ticket lives a minute, but the token it was minted for may be revoked within it: asked, as a bearer would be.
  const tokenId = verdict.identity.tokenId;
  if (tokenId) {
    const info = await tokenStub(c.env, tokenId).info();
    if (!info || info.revokedAtMs !== null)
      return { ok: false, detail: `the token '${verdict.identity.name}' this ticket was minted for is revoked`, presented: verdict.identity.name };
  }
  return verdict;
}

/**
 * What a token (not a query's ticket) is as far as this isolate can tell without asking anyone: a verdict
 * (a ticket where only a query may carry one, API_TOKEN, no issued token's form, an issued token kept on
 * the relay's hot path), or the issued token its object must be asked about. A promise only where an
 * issued token's hash is to be computed. `verifyToken` and the relay's message before Hono
 * (http/relay-post.ts, which goes on only with an identity) both decide through it.
 */
export function tokenAtOnce(
  apiTokens: string[],
  token: string,
  relayed: boolean,
): { verdict: Verdict } | { ask: IssuedToAsk } | Promise<{ verdict: Verdict } | { ask: IssuedToAsk }> {
  // A ticket opens a stream from a browser; as a bearer header it would be a token that never needed to exist.
  if (isTicket(token))
    return { verdict: { ok: false, detail: "a ticket is accepted only as ?access_token= on a WebSocket or SSE GET", presented: "(ticket)" } };
  if (isApiToken(apiTokens, token)) return { verdict: { ok: true, identity: BOOTSTRAP_ADMIN } };
  return issuedToken(token, relayed).then((issued) => {
    if (!issued) return { verdict: { ok: false, detail: "the bearer token is not valid", presented: "(unknown token)" } };
    return "identity" in issued ? { verdict: { ok: true, identity: issued.identity } } : { ask: issued };
  });
}

interface IssuedToAsk {
  id: string;
  hash: string;
  now: number;
}

/**
 * An issued token (`art.<id>.<secret>`) as far as this isolate can tell without asking its object: on the
 * relay's hot path (`relayed`: the machine's object answers for a revocation) a token verified within the
 * minute is taken as kept (http/token-cache.ts); else what asking its object takes. Null: no issued
 * token's form.
 */
async function issuedToken(token: string, relayed: boolean): Promise<{ identity: Identity } | IssuedToAsk | null> {
  const id = apiTokenId(token);
  if (!id) return null;
  const hash = await sha256Hex(token);
  const now = Date.now();
  if (relayed) {
    const kept = verifiedTokens.get(hash, now);
    if (kept) return { identity: kept };
  }
  return { id, hash, now };
}

/**
 * The token of an Authorization header exactly as `hono/bearer-auth` takes it (`Bearer`, any case, a
 * space, then RFC 6750's token characters), or null where it would not (then `authenticate` answers).
 */
export function bearerHeaderToken(header: string | null): string | null {
  if (header === null || header[6] !== " " || header.slice(0, 6).toLowerCase() !== "bearer") return null;
  const token = header.slice(7).trimStart();
  return BEARER_TOKEN.test(token) ? token : null;
}

/** `hono/bearer-auth`'s own pattern of a token (its TOKEN_STRINGS). */
const BEARER_TOKEN = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * A request without an Authorization header: a query token on a streaming GET, the dashboard's sign-in
 * cookie, or Cloudflare Access; null when none.
 */
async function identifyWithoutHeader(c: Context<AppEnv>): Promise<Verdict | null> {
  const token = queryToken(c);
  if (token) return verifyToken(c, token, "query");
  const signedIn = await cookieIdentity(c, settings(c.env).apiTokens);
  if (signedIn) {
    if (!signedIn.ok) return { ok: false, detail: signedIn.detail, presented: "(sign-in cookie)" };
    if (c.req.header("upgrade")?.toLowerCase() === "websocket") refuseForeignOrigin(c, signedIn.identity);
    // SameSite=Strict keeps other sites' requests from carrying the cookie; a change must also carry a
    // header no cross-site form or image can send.
    if (!["GET", "HEAD", "OPTIONS"].includes(c.req.method) && c.req.header(CSRF_HEADER) !== "1") {
      return { ok: false, detail: `a change made with the sign-in cookie must send '${CSRF_HEADER}: 1'`, presented: signedIn.identity.name };
    }
    return signedIn;
  }
  const assertion = c.req.header("cf-access-jwt-assertion");
  const access = settings(c.env).access;
  if (assertion && access) {
    const verdict = await accessIdentity(access, assertion);
    return verdict.ok ? verdict : { ok: false, detail: verdict.detail, presented: verdict.presented };
  }
  return null;
}

/**
 * A browser sends the page's cookie with a WebSocket opened by any site (SameSite does not hold between
 * sibling subdomains, and a WebSocket has no CORS): a cookie-authenticated upgrade must come from a page
 * of this origin. 403, audited.
 */
function refuseForeignOrigin(c: Context<AppEnv>, identity: Identity): void {
  const origin = c.req.header("origin");
  const own = new URL(c.req.url).origin;
  if (origin === own) return;
  const res = problem("permission_denied", `a WebSocket opened with the sign-in cookie must come from ${own}${origin ? `, not ${origin.slice(0, 200)}` : ""}`);
  recordAudit(c, { token: identity.name, role: identity.role, status: res.status });
  throw new HTTPException(403, { res });
}

/** The refusal a caller gets (problem+json), audited. `hono/bearer-auth` adds its challenge where it answers. */
function refusal(c: Context<AppEnv>, code: "token_invalid" | "invalid_request", detail: string, presented: string): Response {
  const res = problem(code, detail);
  recordAudit(c, { token: presented, role: null, status: res.status });
  return res;
}

/** A 401 this module answers itself (not through `hono/bearer-auth`): audited, with its challenge, thrown. */
function refuse(c: Context<AppEnv>, detail: string, presented: string, challenge: string): never {
  const res = refusal(c, "token_invalid", detail, presented);
  res.headers.set("www-authenticate", challenge);
  throw new HTTPException(401, { res });
}

/** Why the last token of this request was refused, for the answer `hono/bearer-auth` builds. */
const refusals = new WeakMap<Context<AppEnv>, { detail: string; presented: string }>();

/** The Authorization header, as `hono/bearer-auth` reads it (RFC 6750: a malformed header is 400 invalid_request). */
const bearer = bearerAuth({
  realm: REALM,
  verifyToken: async (token, c: Context<AppEnv>) => {
    const verdict = await verifyToken(c, token, "header");
    if (verdict.ok) c.set("identity", verdict.identity);
    else refusals.set(c, verdict);
    return verdict.ok;
  },
  noAuthenticationHeader: {
    wwwAuthenticateHeader: CHALLENGE,
    message: (c: Context<AppEnv>) => refusal(c, "token_invalid", "send 'Authorization: Bearer <token>'", "(no token)"),
  },
  invalidAuthenticationHeader: {
    wwwAuthenticateHeader: `Bearer realm="${REALM}", error="invalid_request"`,
    message: (c: Context<AppEnv>) => refusal(c, "invalid_request", "the Authorization header is not 'Bearer <token>'", "(malformed header)"),
  },
  invalidToken: {
    wwwAuthenticateHeader: INVALID_TOKEN_CHALLENGE,
    message: (c: Context<AppEnv>) => {
      const why = refusals.get(c) ?? { detail: "the bearer token is not valid", presented: "(unknown token)" };
      return refusal(c, "token_invalid", why.detail, why.presented);
    },
  },
});

/**
 * Sets `identity` for the rest of the request, or refuses it: 401 (400 for a malformed Bearer header) as
 * problem+json with `WWW-Authenticate`, audited, thrown as an HTTPException like every failure of a route.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("authorization");
  if (header !== undefined && !/^bearer(\s|$)/i.test(header)) {
    // Another scheme (Basic, ...) is no bearer token at all: 401 with the bare challenge (RFC 6750 §3.1).
    refuse(c, "send 'Authorization: Bearer <token>'", "(other scheme)", CHALLENGE);
  }
  if (header === undefined) {
    const verdict = await identifyWithoutHeader(c);
    if (verdict && !verdict.ok) refuse(c, verdict.detail, verdict.presented, INVALID_TOKEN_CHALLENGE);
    if (verdict) {
      c.set("identity", verdict.identity);
      return next();
    }
  }
  return bearer(c, next);
};
