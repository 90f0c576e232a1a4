/**
 * Serving previews (docs/architecture.md, "Previews"): a browser's requests to an app on a machine, handed
 * to the machine's object with the headers the app should see, and the app's answers with the headers the
 * browser should see (http/preview-headers.ts).
 *
 *  - Host mode (PREVIEW_DOMAIN set): `{port}--{label}.{PREVIEW_DOMAIN}` is the app's own origin. A link from
 *    POST /v1/ports/{port}/preview lands on GRANT_PATH with a single-use grant, traded for a pass in a cookie
 *    of that host only; every later request carries it. No path of such a host reaches the dashboard or the API.
 *  - Path mode (no wildcard): `/machines/{machine}/ports/{port}/~{pass}/…` under the worker's own origin,
 *    sandboxed (its scripts cannot act as the signed-in user); the pass is in the path.
 */
import type { Context, MiddlewareHandler } from "hono";
import { setCookie, getCookie } from "hono/cookie";
import type { AppEnv } from "../env";
import { machineObject } from "../durable/stubs";
import { settings } from "../settings";
import { problem } from "../lib/problem-response";
import { appPathOf, appRequestHeaders, browserResponseHeaders, grantRedirect, PREVIEW_COOKIE, type PreviewPlace } from "../http/preview-headers";
import { previewTarget } from "../durable/machine/object-requests";
import { parsePreviewLabel, previewLabel } from "@agent-runtime/protocol/preview";
import { Identifier } from "@agent-runtime/protocol/values";

/** Where a host-mode link lands, on the preview's own origin (a path no app is likely to use). */
export const GRANT_PATH = "/__agent-runtime/preview";

const OPEN_AGAIN = "open the preview again from the dashboard (Machines → Ports) or with POST /v1/ports/{port}/preview";

/** A machine id and a secret, as a grant or a pass names them: `{machine}.{32 hex}`. */
function machineAndSecret(value: string | undefined): { machine: string; secret: string } | null {
  const at = value?.lastIndexOf(".") ?? -1;
  if (!value || at < 1) return null;
  const machine = value.slice(0, at);
  const secret = value.slice(at + 1);
  return Identifier.safeParse(machine).success && /^[0-9a-f]{32}$/.test(secret) ? { machine, secret } : null;
}

/** One request of a preview, to the machine's object and back, with each side's headers. */
async function forward(c: Context<AppEnv>, machine: string, pass: string, place: PreviewPlace, appPath: string): Promise<Response> {
  const request = c.req.raw;
  const target = previewTarget(place.port, appPath, pass);
  const hasBody = request.body !== null && request.method !== "GET" && request.method !== "HEAD";
  const res = await machineObject(c.env, machine).fetch(target, {
    method: request.method,
    headers: appRequestHeaders(request.headers, place),
    body: hasBody ? request.body : null,
    redirect: "manual",
  });
  if (res.status === 101) return res;
  const headers = browserResponseHeaders(res.headers, place, request.headers.get("origin"));
  return new Response(res.body, { status: res.status, headers, ...(headers.has("content-encoding") ? { encodeBody: "manual" as const } : {}) });
}

/** Path mode: `/machines/{machine}/ports/{port}/~{pass}/…`. */
export async function pathPreview(c: Context<AppEnv>): Promise<Response> {
  if (settings(c.env).previewDomain)
    return problem("not_found", "this deployment serves previews at their own origins (PREVIEW_DOMAIN): open them from the dashboard");
  const machine = c.req.param("machine") ?? "";
  const port = Number(c.req.param("port"));
  const url = new URL(c.req.url);
  const base = `/machines/${encodeURIComponent(machine)}/ports/${port}/`;
  const rest = url.pathname.startsWith(base) ? url.pathname.slice(base.length) : "";
  const match = /^~([0-9a-f]{32})(\/.*)?$/.exec(rest);
  if (!Identifier.safeParse(machine).success || !Number.isInteger(port) || port < 1 || port > 65_535)
    return problem("invalid_request", "a preview's address is /machines/{machine}/ports/{port}/");
  if (!match?.[1]) return problem("token_invalid", `this preview address carries no pass: ${OPEN_AGAIN}`);
  // The pass without its trailing slash: relative links would resolve one level up.
  if (match[2] === undefined) return Response.redirect(`${url.origin}${base}~${match[1]}/${url.search}`, 308);
  const place: PreviewPlace = { mode: "path", origin: url.origin, prefix: `${base}~${match[1]}`, port };
  return forward(c, machine, match[1], place, appPathOf(match[2], url.search));
}

/** Whether a request with this Host header may be a preview's (the exact test, on the parsed URL, follows): also asked by http/relay-post.ts. */
export function mayBePreviewHost(domain: string, host: string | undefined): boolean {
  return host === undefined || host.toLowerCase().includes(domain.toLowerCase());
}

/**
 * Host mode, before every other route: a request to a preview's host is the preview's, whatever its path.
 * The worker's own host (the dashboard and the API) goes on.
 */
export const hostPreview: MiddlewareHandler<AppEnv> = async function hostPreview(c, next) {
  const domain = settings(c.env).previewDomain;
  // This runs before every request, and almost none is a preview's: one whose Host header does not even
  // contain the preview domain goes on without its URL parsed (a parse was ~3 % of workerd's CPU per relay round
  // trip: bench/README.md, "The relay's stages"). The exact test on the parsed hostname follows.
  if (!domain || !mayBePreviewHost(domain, c.req.header("host"))) return next(); // no preview domain: no header read either
  const url = new URL(c.req.url);
  const suffix = `.${domain}`;
  if (!url.hostname.endsWith(suffix)) return next();
  const first = url.hostname.slice(0, -suffix.length);
  const target = parsePreviewLabel(first);
  if (!target || first.includes(".")) return problem("not_found", `${url.hostname} is no preview's address: previews are {port}--{machine label}.${domain}`);
  const place: PreviewPlace = { mode: "host", origin: url.origin, prefix: "", port: target.port };
  if (url.pathname === GRANT_PATH) return redeem(c, url, target, place);
  const pass = machineAndSecret(getCookie(c, PREVIEW_COOKIE));
  if (!pass || (await previewLabel(pass.machine)) !== target.label) return problem("token_invalid", `this browser has no pass for ${url.host}: ${OPEN_AGAIN}`);
  // A page of another origin may open a WebSocket with this host's cookie (sibling subdomains are one site).
  const origin = c.req.header("origin");
  if (c.req.header("upgrade")?.toLowerCase() === "websocket" && origin && origin !== url.origin)
    return problem("permission_denied", `a preview's WebSocket must come from its own page (${url.origin}), not ${origin.slice(0, 200)}`);
  return forward(c, pass.machine, pass.secret, place, appPathOf(url.pathname, url.search));
};

/** A host-mode link: its grant traded once for a pass, kept in a cookie of this host only, then on to the app. */
async function redeem(c: Context<AppEnv>, url: URL, target: { port: number; label: string }, place: PreviewPlace): Promise<Response> {
  const grant = machineAndSecret(url.searchParams.get("grant") ?? undefined);
  if (!grant || (await previewLabel(grant.machine)) !== target.label) return problem("token_invalid", `this preview link is not valid here: ${OPEN_AGAIN}`);
  const pass = await machineObject(c.env, grant.machine).redeemPreviewGrant(grant.secret);
  if (!pass || pass.port !== place.port)
    return problem("token_invalid", `this preview link was used already or expired (links work once, for a minute): ${OPEN_AGAIN}`);
  setCookie(c, PREVIEW_COOKIE, `${grant.machine}.${pass.secret}`, {
    path: "/",
    httpOnly: true,
    // Browsers keep Secure cookies on http://*.localhost too (a potentially trustworthy origin).
    secure: true,
    sameSite: "Lax",
    maxAge: Math.max(1, Math.floor((pass.expiresAtMs - Date.now()) / 1000)),
  });
  return c.redirect(grantRedirect(url.searchParams.get("to"), url.origin), 303);
}
