/**
 * An agent reads or writes a file through its client (ACP `fs/read_text_file`, `fs/write_text_file`): the
 * page's file system is the machine's, reached through the runtime's file API.
 */
import { api, errorText } from "./api";

export interface AgentRequest {
  id: string | number;
  method: string;
  params: { sessionId?: string; path: string; content?: string; line?: number; limit?: number };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const optional = (value: unknown, type: "string" | "number"): boolean => value === undefined || typeof value === type;

/** An agent's file request among the messages of its ACP stream, or null for any other message. */
export function fileRequestOf(msg: unknown): AgentRequest | null {
  if (!isRecord(msg) || (msg.method !== "fs/read_text_file" && msg.method !== "fs/write_text_file")) return null;
  const { id, params } = msg;
  if ((typeof id !== "string" && typeof id !== "number") || !isRecord(params) || typeof params.path !== "string") return null;
  const { sessionId, path, content, line, limit } = params;
  if (!optional(sessionId, "string") || !optional(content, "string") || !optional(line, "number") || !optional(limit, "number")) return null;
  return {
    id,
    method: msg.method,
    params: {
      path,
      ...(typeof sessionId === "string" ? { sessionId } : {}),
      ...(typeof content === "string" ? { content } : {}),
      ...(typeof line === "number" ? { line } : {}),
      ...(typeof limit === "number" ? { limit } : {}),
    },
  };
}

/** Lines `line` (1-based) to `line + limit` of a text, as `fs/read_text_file` asks for them. */
export function linesOf(content: string, line?: number, limit?: number): string {
  if (!line && !limit) return content;
  const from = Math.max(0, (line ?? 1) - 1);
  return content
    .split("\n")
    .slice(from, limit ? from + limit : undefined)
    .join("\n");
}

/** Answers one request with `reply` (a JSON-RPC result or error sent back to the agent). */
export async function answerFileRequest(v1: string, msg: AgentRequest, reply: (answer: object) => Promise<unknown>): Promise<void> {
  const url = `${v1}/fs/file?path=${encodeURIComponent(msg.params.path)}`;
  try {
    if (msg.method === "fs/read_text_file") {
      const res = await api(url);
      if (!res.ok) throw new Error(`reading ${msg.params.path}: HTTP ${res.status}`);
      await reply({ id: msg.id, result: { content: linesOf(await res.text(), msg.params.line, msg.params.limit) } });
    } else {
      const res = await api(url, { method: "PUT", headers: { "content-type": "application/octet-stream" }, body: msg.params.content ?? "" });
      if (!res.ok) throw new Error(`writing ${msg.params.path}: HTTP ${res.status}`);
      await reply({ id: msg.id, result: {} });
    }
  } catch (err) {
    await reply({ id: msg.id, error: { code: -32603, message: errorText(err) } });
  }
}
