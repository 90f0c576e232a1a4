/**
 * The worker's private requests to a machine's object (docs/architecture.md, "The machine object"): a
 * terminal's and an ACP connection's WebSocket upgrade, a preview's request, and the sidecar's tunnel
 * (anything else). A route writes one with the functions here and the object reads it back with
 * `objectRequestOf`, so the paths, their query and the holder's header are known to this module only.
 */
import { AgentId } from "@agent-runtime/protocol/values";
import { holderHeader, holderOf, type StreamHolder } from "../streams/stream-holders";

/** Never seen outside: the object is reached through its stub, whatever the host says. */
const ORIGIN = "https://machine";
const TERMINAL = "/_terminal/";
const ACP_SOCKET = "/acp-socket";
const PREVIEW = "/_preview/";

/** What a request to the object asks for, read from its path, query and headers. */
export type ObjectRequest =
  /** A terminal's viewer on `process`, held by the route's caller (null: the route named none). */
  | { kind: "terminal"; process: string; holder: StreamHolder | null }
  /** ACP's WebSocket form: a connection to a new server of `agent` (null: none or not an agent id). */
  | { kind: "acp-socket"; agent: AgentId | null; holder: StreamHolder | null }
  /** One request of a preview of `port`, at `path` of the app, under a pass. */
  | { kind: "preview"; port: number; path: string; pass: string }
  /** The sidecar's tunnel upgrade. */
  | { kind: "tunnel" };

/** A terminal's WebSocket upgrade for `holder`. */
export function terminalUpgrade(process: string, holder: StreamHolder): Request {
  return new Request(`${ORIGIN}${TERMINAL}${encodeURIComponent(process)}`, { headers: { upgrade: "websocket", ...holderHeader(holder) } });
}

/** An ACP connection's WebSocket upgrade, starting `agent`, for `holder`. */
export function acpSocketUpgrade(agent: AgentId, holder: StreamHolder): Request {
  return new Request(`${ORIGIN}${ACP_SOCKET}?${new URLSearchParams({ agent })}`, { headers: { upgrade: "websocket", ...holderHeader(holder) } });
}

/** Where a preview's request goes (the route sends it with the browser's method, headers and body). */
export function previewTarget(port: number, appPath: string, pass: string): string {
  return `${ORIGIN}${PREVIEW}${port}?${new URLSearchParams({ path: appPath, pass })}`;
}

export function objectRequestOf(request: Request): ObjectRequest {
  const url = new URL(request.url);
  const path = url.pathname;
  if (path.startsWith(TERMINAL)) return { kind: "terminal", process: decodeURIComponent(path.slice(TERMINAL.length)), holder: holderOf(request) };
  if (path === ACP_SOCKET) {
    const agent = AgentId.safeParse(url.searchParams.get("agent"));
    return { kind: "acp-socket", agent: agent.success ? agent.data : null, holder: holderOf(request) };
  }
  if (path.startsWith(PREVIEW)) {
    return {
      kind: "preview",
      port: Number(path.slice(PREVIEW.length)),
      path: url.searchParams.get("path") ?? "/",
      pass: url.searchParams.get("pass") ?? "",
    };
  }
  return { kind: "tunnel" };
}
