/**
 * One connection of ACP's remote transport (docs/architecture.md, "ACP's remote transport"): which client
 * messages its headers allow, where each message the agent writes goes (the connection's own stream or one
 * session's), and which sessions must be reattached after its agent was lost. Pure state: the machine's
 * object owns one per HTTP connection, the streams themselves live in `streams.ts`.
 */
import { type JsonRpcMessage, sessionIdIn } from "@agent-runtime/protocol/acp";

/** The transport's headers (`Acp-Connection-Id`, `Acp-Session-Id`), spelled as HTTP compares them and Hono reads them: lowercase. */
export const HEADER_CONNECTION_ID = "acp-connection-id";
export const HEADER_SESSION_ID = "acp-session-id";

/** Methods whose POST must name their session in `Acp-Session-Id` (as the SDK's server requires). */
const SESSION_SCOPED = new Set([
  "session/cancel",
  "session/close",
  "session/delete",
  "session/fork",
  "session/load",
  "session/prompt",
  "session/resume",
  "session/set_config_option",
  "session/set_mode",
  "session/set_model",
]);

/** The two ways a client brings a lost session back. */
const REATTACH = new Set(["session/load", "session/resume"]);

/** Where a message goes: a session's stream, or (null) the connection's. */
export type Route = string | null;

export type Verdict = { ok: true; route: Route } | { ok: false; status: 400 | 409; detail: string };

/** A JSON-RPC id as a map key that keeps 1 and "1" apart. */
export function idKey(id: unknown): string | null {
  return typeof id === "string" || typeof id === "number" ? JSON.stringify(id) : null;
}

/** How many answer routes a connection remembers for requests whose answer never came (a bound, not a limit in practice). */
const MAX_ROUTES = 4096;

export class AcpConnection {
  /** Where the answer to each client request goes, by its id. */
  private readonly answerRoutes = new Map<string, { route: Route; session: string | null; method: string }>();
  /** The stream each agent request went out on, by its id: the client's response must name the same session. */
  private readonly agentRequestRoutes = new Map<string, Route>();
  /** Sessions whose agent was lost: only `session/load` or `session/resume` may address them until one succeeds. */
  private readonly detached = new Set<string>();
  /** Sessions this connection has used. */
  private readonly sessions = new Set<string>();
  /** The agent process behind the connection is gone (a restarted sidecar, an exit, an idle stop). */
  agentLost = false;
  /** The last sequence of the agent's stream routed (a replayed batch after a reconnect is skipped up to it). */
  lastSeq = 0;

  constructor(
    readonly id: string,
    readonly owner: string,
  ) {}

  /**
   * A client message, checked against its `Acp-Session-Id` header as the SDK's server checks it (400 for a
   * missing or mismatched header), and against the sessions the agent lost (409: reattach it first).
   * A request's answer will go where the request came from; `session/load`'s goes to the connection.
   */
  accept(message: JsonRpcMessage, headerSession: string | null): Verdict {
    const key = idKey(message.id);
    if (message.method === undefined) {
      // The client's response to a request of the agent's: it names the session that request came on.
      const route = key !== null ? this.agentRequestRoutes.get(key) : undefined;
      if (route !== undefined && route !== null && headerSession !== route) {
        return { ok: false, status: 400, detail: headerSession ? "Mismatched Acp-Session-Id" : "Missing Acp-Session-Id" };
      }
      if (key !== null) this.agentRequestRoutes.delete(key);
      return { ok: true, route: route ?? null };
    }
    const paramsSession = sessionIdIn(message.params);
    if ((SESSION_SCOPED.has(message.method) || paramsSession !== null) && !headerSession) {
      return { ok: false, status: 400, detail: "Missing Acp-Session-Id" };
    }
    if (headerSession && paramsSession !== null && headerSession !== paramsSession) {
      return { ok: false, status: 400, detail: "Mismatched Acp-Session-Id" };
    }
    const route = headerSession ?? paramsSession;
    if (route !== null && this.detached.has(route) && !REATTACH.has(message.method)) {
      return {
        ok: false,
        status: 409,
        detail: `session '${route}' lost its agent (the machine's sidecar restarted or the agent exited): reattach it with session/load or session/resume`,
      };
    }
    if (route !== null) this.sessions.add(route);
    if (key !== null && message.id !== null && message.id !== undefined) {
      const oldest = this.answerRoutes.size >= MAX_ROUTES ? this.answerRoutes.keys().next() : null;
      if (oldest && !oldest.done) this.answerRoutes.delete(oldest.value);
      this.answerRoutes.set(key, { route: message.method === "session/load" ? null : route, session: route, method: message.method });
    }
    return { ok: true, route };
  }

  /** The agent answered a client request: the stream the answer goes to. A reattached session is whole again. */
  answered(id: unknown, ok: boolean, result: unknown): Route {
    const key = idKey(id);
    const pending = key !== null ? this.answerRoutes.get(key) : undefined;
    if (key !== null) this.answerRoutes.delete(key);
    const created = ok ? sessionIdIn(result) : null;
    if (created) this.sessions.add(created);
    // A load's or resume's answer may not carry the id (resume answers `{}`): it is the session it was for.
    if (ok && pending?.session && REATTACH.has(pending.method)) this.detached.delete(pending.session);
    return pending?.route ?? null;
  }

  /**
   * A message the agent wrote (a notification, a request of its own, or an answer that came after its
   * caller stopped waiting): the stream it goes to, or undefined for one already routed.
   */
  route(seq: number, message: Record<string, unknown>): Route | undefined {
    if (seq <= this.lastSeq) return undefined;
    this.lastSeq = seq;
    if (typeof message.method !== "string") return this.answered(message.id, message.error === undefined, message.result);
    const session = sessionIdIn(message.params);
    const key = idKey(message.id);
    if (key !== null) this.agentRequestRoutes.set(key, session);
    return session;
  }

  /** The agent is gone: every session it had must be reattached before anything else is sent for it. */
  lost(): void {
    this.agentLost = true;
    for (const session of this.sessions) this.detached.add(session);
    this.agentRequestRoutes.clear();
  }

  /** The agent was started again (for a reattach or a new session); detached sessions stay so until reattached. */
  restored(): void {
    this.agentLost = false;
  }

  isDetached(session: string): boolean {
    return this.detached.has(session);
  }
}
