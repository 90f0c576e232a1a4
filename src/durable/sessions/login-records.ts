/**
 * Sessions that wait for their agent's login (docs/architecture.md, "Logins"): a `session/new` the agent
 * refused with ACP's `auth_required` is recorded as a session in `needs_login`, with the ways its agent
 * offers to be logged in, and people are told; so is a session whose turn the agent refused that way (as
 * Claude Code's adapter does: it starts sessions, and refuses at the first prompt). Once the agent is logged in the runtime sends that
 * `session/new` again (SessionCalls.retryLogins); its answer makes the same record a started session.
 */
import type { JsonRpcId, JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { authMethodsOf, isAuthRequired, type LoginMethod } from "@agent-runtime/protocol/logins";
import type { Session } from "@agent-runtime/protocol/sessions";
import type { RuntimeEvent } from "../notifications/events";
import type { LiveSession, LiveSessions } from "./live-sessions";

export class LoginRecords {
  /** What each server's agent offered in its answer to `initialize`. */
  private readonly offered = new Map<string, LoginMethod[]>();
  /** The runtime's own `session/new`s sent again after a login, by request id: the record each is for. */
  private readonly retries = new Map<string, string>();

  constructor(
    private readonly sessions: LiveSessions,
    private readonly events: (event: RuntimeEvent) => void,
  ) {}

  initialized(serverId: string, initializeResult: unknown): void {
    this.offered.set(serverId, authMethodsOf(initializeResult).methods);
  }

  /** What a server's agent offered to be logged in by. */
  methodsOf(serverId: string): LoginMethod[] {
    return this.offered.get(serverId) ?? [];
  }

  /** The runtime sends a waiting session's `session/new` again with this id. */
  retrying(requestId: JsonRpcId, sessionId: string): void {
    this.retries.set(JSON.stringify(requestId), sessionId);
  }

  /**
   * A `session/new` was answered: a refusal for want of a login is recorded (the record's id is returned,
   * for the client's answer), a retry's answer goes to the record it was for. False: not this module's.
   */
  answered(
    serverId: string,
    request: JsonRpcMessage,
    body: string,
    result: { sessionId?: unknown } | undefined,
    who: string,
    now: number,
  ): { handled: boolean; needsLogin?: Session } {
    const retryOf = this.retries.get(JSON.stringify(request.id));
    if (retryOf) this.retries.delete(JSON.stringify(request.id));
    const waiting = retryOf ? this.sessions.session(retryOf) : null;
    if (waiting && typeof result?.sessionId === "string") {
      // Logged in: the session the person waited for starts, under the agent's new id.
      this.sessions.adopt(waiting, serverId, result.sessionId);
      waiting.row.login = null;
      waiting.tail.add("notice", now, { text: "the agent is logged in: the session started" });
      this.sessions.setState(waiting, "idle", now);
      return { handled: true };
    }
    if (!isAuthRequired(body)) return { handled: waiting !== null };
    if (waiting) {
      waiting.tail.add("notice", now, { text: "the agent still asks to be logged in" });
      this.sessions.setState(waiting, "needs_login", now);
      return { handled: true, needsLogin: this.sessions.toSession(waiting.row) };
    }
    const server = this.sessions.server(serverId);
    const params: Record<string, unknown> =
      typeof request.params === "object" && request.params !== null ? Object.fromEntries(Object.entries(request.params)) : {};
    if (!server || typeof params.cwd !== "string") return { handled: false };
    const methods = this.offered.get(serverId) ?? [];
    const mcpServers = Array.isArray(params.mcpServers) ? params.mcpServers : [];
    const placeholder = `needs-login-${crypto.randomUUID()}`;
    const session = this.sessions.create(server, placeholder, params.cwd, mcpServers, who, now, null, methods);
    session.tail.add("notice", now, { text: `${server.agent} must be logged in first: ${methods.map((m) => m.name).join(", ") || "see its agent's login"}` });
    this.sessions.scheduleFlush(true);
    const record = this.sessions.toSession(session.row);
    this.events({ type: "agent.login", machine: record.machine, session: record, methods });
    return { handled: true, needsLogin: record };
  }
}

/**
 * A turn the agent refused for want of a login (`auth_required` answering `session/prompt`): the session
 * waits for the login, as one refused at `session/new` does (its `session/new` is sent again then, and the
 * person prompts again). False: not such a refusal.
 */
export function turnNeedsLogin(
  sessions: LiveSessions,
  logins: LoginRecords,
  session: LiveSession,
  answer: { body: string; error: string },
  events: (event: RuntimeEvent) => void,
  now: number,
): boolean {
  if (!isAuthRequired(answer.body)) return false;
  session.tail.add("error", now, { text: answer.error });
  session.row.pending = null;
  session.row.turn_started_at = null;
  const methods = logins.methodsOf(session.row.server_id);
  session.row.login = JSON.stringify(methods);
  session.tail.add("notice", now, {
    text: `${session.row.agent} must be logged in first: ${methods.map((m) => m.name).join(", ") || "see its agent's login"}`,
  });
  sessions.setState(session, "needs_login", now);
  const record = sessions.toSession(session.row);
  events({ type: "agent.login", machine: record.machine, session: record, methods });
  return true;
}

/** The client's answer, with the record's id and the methods added to the agent's error (`error.data`), so a client can follow it. */
export function withLoginData(body: string, record: Session): string {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return body;
  }
  if (typeof value !== "object" || value === null || !("error" in value)) return body;
  const error = value.error;
  if (typeof error !== "object" || error === null) return body;
  const data = "data" in error ? error.data : undefined;
  if (data !== undefined && (typeof data !== "object" || data === null || Array.isArray(data))) return body;
  const added = { "agent-runtime/session": record.id, "agent-runtime/login": record.login ?? null };
  return JSON.stringify({ ...value, error: { ...error, data: { ...(typeof data === "object" ? data : {}), ...added } } });
}
