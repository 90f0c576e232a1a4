/**
 * The ACP servers' rows as their agents start (docs/architecture.md, "Sessions" and "Sandboxes: the team's
 * rules"): a client's first message names the agent and the server is recorded with the sandbox it was
 * started in; a restore starts it again in the same sandbox, and the sessions it reattached say so.
 */
import { type AgentCapabilities, agentCapabilitiesOf, answerOf } from "@agent-runtime/protocol/acp-meaning";
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import type { JsonRpcId } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { LiveSessions } from "./live-sessions";

/** A client started a server with `?agent=`, in this sandbox (sandbox/server-sandbox.ts): a restart asks for the same one. */
export function serverStarted(sessions: LiveSessions, serverId: string, agent: AgentId, sandbox: SessionSandbox): void {
  const server = sessions.server(serverId);
  const kept = JSON.stringify(sandbox);
  if (server && server.agent === agent) {
    if (server.sandbox !== kept) sessions.serverChanged({ ...server, sandbox: kept });
    return;
  }
  sessions.serverChanged({
    server_id: serverId,
    agent,
    initialize: null,
    auth_method: null,
    can_resume: 0,
    can_load: 0,
    can_close: 0,
    can_delete: 0,
    agent_version: null,
    cursor: server?.cursor ?? 0,
    sandbox: kept,
  });
}

/** A server's agent started again (a restore) in this sandbox: the server and the sessions it reattached say so. */
export function serverRestored(sessions: LiveSessions, serverId: string, sandbox: SessionSandbox, reattached: string[]): void {
  const server = sessions.server(serverId);
  if (!server) return;
  const kept = JSON.stringify(sandbox);
  sessions.serverChanged({ ...server, sandbox: kept });
  for (const acpId of reattached) {
    const session = sessions.byAcpId(serverId, acpId);
    if (!session || session.row.sandbox === kept) continue;
    session.row.sandbox = kept;
    session.dirty = true;
    sessions.notifyRecord(session);
  }
  sessions.scheduleFlush();
}

/**
 * An answer's text without its own id (the first `"id":<the request's id>` in it): the same answer to
 * another request of the same client reads the same, with no parse and no serialisation (string work
 * only). Null when the id is not written that way (the answer is then read afresh). A key to tell an
 * answer of this server's agent seen before, never read: what it says is the agent's own either way.
 */
export function answerKey(body: string, id: JsonRpcId | undefined): string | null {
  if (id === undefined || id === null) return null;
  const written = `"id":${JSON.stringify(id)}`;
  const at = body.indexOf(written);
  return at < 0 ? null : body.slice(0, at) + body.slice(at + written.length);
}

/**
 * What each server's agent said in its `initialize` answer, written to its row when it changed. The same
 * result as last time on a server reads the same: its zod parse is kept, not redone (a client that
 * initializes again, a health check, the round-trip bench).
 */
export class InitializeAnswers {
  /** Per server, the last error-free answer and what it said (one entry per server id, bounded: a memo, not a record). */
  private readonly known = new Map<string, { key: string; caps: AgentCapabilities }>();

  constructor(
    private readonly sessions: LiveSessions,
    /** A result read afresh (its login methods are kept from it: login-records.ts). */
    private readonly readAfresh: (serverId: string, result: unknown) => void,
  ) {}

  answered(serverId: string, id: JsonRpcId | undefined, params: Record<string, unknown>, body: string): void {
    const server = this.sessions.server(serverId);
    if (!server) return;
    // Compared as the answer's text without its id; what it says is still compared with the record below.
    const key = answerKey(body, id);
    const known = this.known.get(serverId);
    let caps: AgentCapabilities;
    if (key !== null && known?.key === key) caps = known.caps;
    else {
      const answer = answerOf(body);
      if (answer.error !== undefined) return;
      caps = agentCapabilitiesOf(answer.result);
      this.readAfresh(serverId, answer.result);
      if (this.known.size >= 1000) this.known.clear();
      if (key !== null) this.known.set(serverId, { key, caps });
    }
    const learned = {
      initialize: JSON.stringify(params),
      can_load: caps.load ? 1 : 0,
      can_resume: caps.resume ? 1 : 0,
      can_close: caps.close ? 1 : 0,
      can_delete: caps.delete ? 1 : 0,
      agent_version: caps.version,
    };
    // A client that initializes again as before (a reconnect, a health check) writes nothing.
    const same =
      server.initialize === learned.initialize &&
      server.can_load === learned.can_load &&
      server.can_resume === learned.can_resume &&
      server.can_close === learned.can_close &&
      server.can_delete === learned.can_delete &&
      server.agent_version === learned.agent_version;
    if (same) return;
    this.sessions.serverChanged({ ...server, ...learned });
  }
}
