/**
 * The relay's message before Hono (docs/architecture.md, "The relay's route before the router"):
 * `POST {base_url}/v1/acp/{server_id}` carries every message of every session, and the relay app's chain
 * (the preview host, authentication, the audit, the body's limit, the access guard, the handler: six
 * async layers of Hono's `compose`, its `Context` and a router's match) cost more in workerd than what it
 * checks. A request whose every check passes as this isolate can tell at once is answered here, by one
 * function asking the same checks in the same order, through the functions the middleware asks:
 *
 *  1. no preview's host (`mayBePreviewHost`, routes/preview.ts);
 *  2. a bearer token `hono/bearer-auth` takes (`bearerHeaderToken`) that `tokenAtOnce` (as `verifyToken`
 *     asks it) says is someone's: API_TOKEN, or an issued token this isolate verified within the minute
 *     (whose revocation the machine's object answers: http/token-cache.ts);
 *  3. a body within the limit by its Content-Length (what `hono/body-limit` then lets through unread);
 *  4. a machine this isolate knows (`machineKnownHere`), the role and the scope (`accessRefusal`);
 *  5. the common form of the server's id and query (`commonRelayInput`), an answer it can send
 *     (`accepts`), a JSON media type (`isJsonRequestType`).
 *
 * Anything else (a refusal, a token to ask its object about, a machine to ask the team about, a body
 * without a length) goes to the relay app (app.ts, `createRelayApp`), which answers and audits it as
 * before: nothing is read or recorded here until every check has passed. The message itself is then sent
 * as the handler sends it (`relayAcpMessage`), an error answered as the app's `onError` answers it
 * (`errorAnswer`), and the answer audited as `auditTrail` audits it (`audited`, `appendAudit`).
 * src/app-relay.workers.test.ts holds this to the relay app's and the whole app's answers and audit lines.
 */
import type { Env } from "../env";
import { settings } from "../settings";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { mayBePreviewHost } from "../routes/preview";
import { type Access, accessRefusal, machineKnownHere } from "./access";
import { appendAudit, audited } from "./audit";
import { bearerHeaderToken, tokenAtOnce } from "./auth";
import { errorAnswer } from "./error-answer";
import { callerOfIdentity, machineStubOf, settled } from "./machine";
import { accepts } from "./negotiation";
import { commonRelayInput, type RelayInput } from "./relay-input";
import { revocationAnsweredByMachine } from "./token-cache";
import { isJsonRequestType } from "./validation";
import type { Identity } from "../lib/identity";

/** What `POST /v1/acp/{server_id}` needs (routes/acp.ts declares it with this). */
export const RELAY_POST_ACCESS: Access = { role: "member", machine: true };

/**
 * The requests the relay's route answers: a POST to `/v1/acp/{server_id}` or
 * `/machines/{machine}/v1/acp/{server_id}`, one non-empty segment each, with any query (groups: the path,
 * the machine, the server's id). No other route of the whole app takes such a path
 * (src/app-relay.workers.test.ts), so the apps agree on which route it is.
 */
const RELAY_POST_URL = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*(\/(?:machines\/([^/?#]+)\/)?v1\/acp\/([^/?#]+))(?:\?[^#]*)?$/;

export function isRelayPost(request: Request): boolean {
  return relayPostUrl(request) !== null;
}

/** The URL of a request `isRelayPost` recognises, split (the path, the machine, the server's id); else null. */
export function relayPostUrl(request: Request): RelayPostUrl | null {
  if (request.method !== "POST") return null;
  const url = request.url;
  const parts = RELAY_POST_URL.exec(url);
  return parts ? { url, path: parts[1]!, named: parts[2], serverId: parts[3]! } : null;
}

export interface RelayPostUrl {
  url: string;
  path: string;
  named: string | undefined;
  serverId: string;
}

/** Where an answer goes when this function does not take the request: the relay app. */
interface App {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response>;
}

/** The message of a request `relayPostUrl` recognised: answered here where every check passes at once, else by `app`. */
export async function relayPost(request: Request, at: RelayPostUrl, env: Env, ctx: ExecutionContext, app: App): Promise<Response> {
  let admitted = admit(request, at, env);
  if (admitted instanceof Promise) admitted = await admitted; // only an issued token's hash is awaited
  if (!admitted) return app.fetch(request, env, ctx);
  const { identity, machine, input } = admitted;
  let answer: Response;
  try {
    answer = await relayAcpMessage(env, machine, identity, input, await request.text());
  } catch (err) {
    answer = errorAnswer(err, request.method, at.url);
  }
  // As `auditTrail`: a message within a session its first POST (which named the agent) audited; a failure always.
  if (audited(request.method, answer.status, false, !input.agent)) {
    const route = at.named === undefined ? "/v1/acp/{server_id}" : "/machines/{machine}/v1/acp/{server_id}";
    appendAudit(env, ctx, { token: identity.name, role: identity.role, status: answer.status, method: request.method, route, machine });
  }
  return answer;
}

interface Admitted {
  identity: Identity;
  machine: string;
  input: RelayInput;
}

/**
 * Every check of the relay app's chain, in its order, passed as this isolate can tell without asking
 * anyone; else null. A promise only where an issued token's hash is to be computed.
 */
function admit(request: Request, at: RelayPostUrl, env: Env): Admitted | null | Promise<Admitted | null> {
  // A percent-encoded path is Hono's to decode: it never passes here, as no machine this isolate knows and
  // no server id of the common form has a `%` (app-relay.workers.test.ts sends both encoded).
  const headers = request.headers;
  let config: ReturnType<typeof settings>;
  try {
    config = settings(env);
  } catch {
    return null; // the relay app answers what a broken configuration makes of a request
  }
  // 1. The preview host (`hostPreview`).
  if (config.previewDomain && mayBePreviewHost(config.previewDomain, headers.get("host") ?? undefined)) return null;
  // 2. Authentication (`authenticate`, then `hono/bearer-auth`'s `verifyToken`, through the same `tokenAtOnce`).
  const token = bearerHeaderToken(headers.get("authorization"));
  if (token === null) return null;
  const known = tokenAtOnce(config.apiTokens, token, revocationAnsweredByMachine(request.method, at.path));
  if (!(known instanceof Promise)) return identified(known) ? afterAuthentication(request, at, config, known.verdict.identity) : null;
  return known.then((k) => (identified(k) ? afterAuthentication(request, at, config, k.verdict.identity) : null));
}

/** A token known at once to be someone's: anything else (a refusal, an object to ask) is the relay app's. */
function identified(known: Awaited<ReturnType<typeof tokenAtOnce>>): known is { verdict: { ok: true; identity: Identity } } {
  return "verdict" in known && known.verdict.ok;
}

/** The checks after authentication, in the chain's order. */
function afterAuthentication(request: Request, at: RelayPostUrl, config: ReturnType<typeof settings>, identity: Identity): Admitted | null {
  const headers = request.headers;
  // 3. The body's limit (`hono/body-limit` with a Content-Length and no Transfer-Encoding: the length decides).
  const length = headers.get("content-length");
  if (!request.body || length === null || headers.has("transfer-encoding") || !(Number.parseInt(length, 10) <= LIMITS.maxBodyBytes)) return null;
  // 4. The access guard (`guard`): the machine resolved and known, then the role and the scope.
  const machine = at.named ?? config.defaultMachine;
  if (!machine || !machineKnownHere(machine) || accessRefusal(identity, RELAY_POST_ACCESS, machine)) return null;
  // 5. The handler's own reading (`postToAcpServer`): the path and query, the answer's type, the body's.
  const input = commonRelayInput(at.url, at.serverId);
  const contentType = headers.get("content-type");
  if (!input || !accepts(headers.get("accept") ?? undefined, "application/json") || contentType === null || !isJsonRequestType(contentType)) return null;
  return { identity, machine, input };
}

/**
 * One message to the ACP server `input` names, through the machine's object, which reads the text against
 * the JSON-RPC schema (a 400 as a declared body's), records sessions and reattaches one whose agent is
 * gone (docs/architecture.md, "Sessions"): the agent's answer (200), or 202 for a notification or a
 * response. The route's handler (routes/acp.ts) and `relayPost` both send it this way.
 */
export async function relayAcpMessage(env: Env, machine: string, identity: Identity, input: RelayInput, text: string): Promise<Response> {
  const { serverId, agent } = input;
  const result = settled(
    await machineStubOf(env, machine).acpPost(
      { serverId, ...(agent ? { agent } : {}), text, who: identity.name },
      settings(env).acpTimeoutMs,
      callerOfIdentity(identity),
    ),
  );
  if (result.status === 202) return new Response(null, { status: 202 });
  return new Response(result.body, { headers: { "content-type": "application/json" } });
}
