/**
 * The ACP servers' rows as their agents start (docs/architecture.md, "Sessions" and "Sandboxes: the team's
 * rules"): a client's first message names the agent and the server is recorded with the sandbox it was
 * started in; a restore starts it again in the same sandbox, and the sessions it reattached say so.
 */
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
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
