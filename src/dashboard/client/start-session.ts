/**
 * Starting a session from the page: an ACP server on the machine through the relay (`initialize`, then
 * `session/new`), then the runtime's record of it, whose view takes over (prompts, questions, the
 * transcript). The same relay any API client uses: the session is listed, resumable and notified like
 * one started elsewhere.
 */
import type { AgentInfo } from "@agent-runtime/protocol/agents";
import type { Session } from "@agent-runtime/protocol/sessions";
import { WORKTREE_META } from "@agent-runtime/protocol/review-text";
import { z } from "zod";
import { ApiError, must, typed, typedMachine } from "./api";

/** What the page tells the agent it can do: read and write files (through the runtime's file API). */
export const CLIENT_CAPABILITIES = { fs: { readTextFile: true, writeTextFile: true } };

/** ACP's answer to `session/new` (NewSessionResponse): the session's id, and what else the agent says. */
const NewSessionResponse = z.object({ sessionId: z.string() });

/** One JSON-RPC call to the session's ACP server through the relay; its `result` is the agent's to shape. */
async function call(machine: string, serverId: string, id: number, method: string, params: unknown, agent?: string): Promise<unknown> {
  const answer = await must(
    typedMachine(machine).POST("/v1/acp/{server_id}", {
      params: { path: { server_id: serverId }, query: agent ? { agent } : {} },
      body: { jsonrpc: "2.0", id, method, params },
      headers: { accept: "application/json" },
    }),
  );
  // 202 (no body) is the answer to a notification: a request with an id always gets its response.
  if (!answer) throw new Error(`the agent did not answer ${method}`);
  const { error } = answer;
  if (error !== undefined && error !== null)
    throw new Error(typeof error === "object" && "message" in error ? String(error.message) : "the agent refused the call");
  return answer.result;
}

/** `worktree`: run the session in a new git worktree of the folder's repository, from `base` (default its HEAD). */
export async function startSession(machine: string, agent: AgentInfo["id"], cwd: string, worktree: { base?: string } | null = null): Promise<Session> {
  const serverId = `dash-${crypto.randomUUID().slice(0, 8)}`;
  const initialize = { protocolVersion: 1, clientCapabilities: CLIENT_CAPABILITIES, clientInfo: { name: "agent-runtime dashboard", version: "1" } };
  await call(machine, serverId, 1, "initialize", initialize, agent);
  const meta = worktree ? { _meta: { [WORKTREE_META]: worktree.base ? { base: worktree.base } : {} } } : {};
  const { sessionId } = NewSessionResponse.parse(await call(machine, serverId, 2, "session/new", { cwd: cwd || ".", mcpServers: [], ...meta }));
  // The record is written as the answer passes the machine's object: it is listed by now.
  const { sessions } = await must(typed.GET("/v1/sessions", { params: { query: { machine, limit: 50 } } }));
  const record = sessions.find((s) => s.sessionId === sessionId);
  if (!record) throw new ApiError(500, `the session ${sessionId} started but is not listed`);
  return record;
}
