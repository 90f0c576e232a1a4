/**
 * Starting a session from the page: an ACP server on the machine through the relay (`initialize`, then
 * `session/new`), then the runtime's record of it, whose view takes over (prompts, questions, the
 * transcript). The same relay any API client uses: the session is listed, resumable and notified like
 * one started elsewhere.
 */
import type { AgentInfo } from "@agent-runtime/protocol/agents";
import type { Session, SessionList } from "@agent-runtime/protocol/sessions";
import { WORKTREE_META } from "@agent-runtime/protocol/review-text";
import { ApiError, machineApi, send } from "./api";

/** What the page tells the agent it can do: read and write files (through the runtime's file API). */
export const CLIENT_CAPABILITIES = { fs: { readTextFile: true, writeTextFile: true } };

interface RpcAnswer<T> {
  result?: T;
  error?: { message: string };
}

async function call<T>(path: string, id: number, method: string, params: unknown): Promise<T> {
  const answer = await send<RpcAnswer<T>>(path, { jsonrpc: "2.0", id, method, params }, "POST", { accept: "application/json" });
  if (answer.error) throw new Error(answer.error.message);
  return answer.result as T;
}

/** `worktree`: run the session in a new git worktree of the folder's repository, from `base` (default its HEAD). */
export async function startSession(machine: string, agent: AgentInfo["id"], cwd: string, worktree: { base?: string } | null = null): Promise<Session> {
  const serverId = `dash-${crypto.randomUUID().slice(0, 8)}`;
  const path = `${machineApi(machine)}/acp/${serverId}`;
  await call(`${path}?agent=${encodeURIComponent(agent)}`, 1, "initialize", {
    protocolVersion: 1,
    clientCapabilities: CLIENT_CAPABILITIES,
    clientInfo: { name: "agent-runtime dashboard", version: "1" },
  });
  const meta = worktree ? { _meta: { [WORKTREE_META]: worktree.base ? { base: worktree.base } : {} } } : {};
  const { sessionId } = await call<{ sessionId: string }>(path, 2, "session/new", { cwd: cwd || ".", mcpServers: [], ...meta });
  // The record is written as the answer passes the machine's object: it is listed by now.
  const { sessions } = await send<SessionList>(`/v1/sessions?machine=${encodeURIComponent(machine)}&limit=50`, undefined, "GET");
  const record = sessions.find((s) => s.sessionId === sessionId);
  if (!record) throw new ApiError(500, `the session ${sessionId} started but is not listed`);
  return record;
}
