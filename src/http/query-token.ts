/**
 * Where a token may travel in the URL (`?access_token=`, docs/architecture.md "Trust"): browsers cannot
 * put a header on an EventSource or a WebSocket, so the routes that stream take one there, and no other
 * route does. A JSON route never does, whatever its Accept says: a token in a URL ends up in histories and
 * logs, and a route that needs none there must not make that habit work.
 */
import { prefers } from "./negotiation";

/** Routes that answer an SSE stream, relative to `{base_url}` (the API under /v1, ACP's transport at /acp). */
const SSE_ROUTES: { path: RegExp; when?: (query: URLSearchParams) => boolean }[] = [
  { path: /^\/v1\/acp\/[^/]+$/ },
  { path: /^\/v1\/sessions\/[^/]+\/transcript$/ },
  { path: /^\/v1\/processes\/[^/]+\/logs$/, when: (query) => ["true", "1"].includes(query.get("follow") ?? "") },
  { path: /^\/acp$/ },
];

/** Routes that take a WebSocket upgrade. */
const WEBSOCKET_ROUTES: RegExp[] = [/^\/v1\/processes\/[^/]+\/terminal\/ws$/, /^\/acp$/];

/** `{base_url}` is the worker or `/machines/{machine}`: the route is what follows it. */
function routeOf(path: string): string {
  const match = /^\/machines\/[^/]+(\/.*)$/.exec(path);
  return match?.[1] ?? path;
}

export interface StreamingRequest {
  method: string;
  url: string;
  accept: string | undefined;
  upgrade: string | undefined;
}

/** May this request carry its token as `?access_token=`? A WebSocket upgrade of a WebSocket route, or an SSE GET of an SSE route. */
export function mayCarryQueryToken(req: StreamingRequest): boolean {
  if (req.method !== "GET") return false;
  const url = new URL(req.url);
  const route = routeOf(url.pathname);
  if (req.upgrade?.toLowerCase() === "websocket") return WEBSOCKET_ROUTES.some((r) => r.test(route));
  if (!prefers(req.accept, "text/event-stream", "application/json")) return false;
  return SSE_ROUTES.some((r) => r.path.test(route) && (r.when?.(url.searchParams) ?? true));
}
