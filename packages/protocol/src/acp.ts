/**
 * ACP: the JSON-RPC message a client posts, and the ACP servers a machine runs (docs/architecture.md, "Sessions").
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { describeIssues } from "./issues";
import type { ProblemInit } from "./problems";
import { AgentId } from "./values";
import { resource } from "./resource";
import { isJsonObject } from "./json";

export const JsonRpcId = z.union([z.string(), z.number(), z.null()]);
export type JsonRpcId = z.infer<typeof JsonRpcId>;

export const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: JsonRpcId.optional(),
    method: z.string().min(1).optional(),
    params: z.unknown().optional(),
    result: z.unknown().optional(),
    error: z.unknown().optional(),
  })
  .passthrough()
  .superRefine((msg, ctx) => {
    const isCall = msg.method !== undefined;
    const isReply = "result" in msg || "error" in msg;
    if (isCall === isReply) {
      ctx.addIssue({ code: "custom", message: "a message has either a method (request, notification) or a result/error (response)", path: ["method"] });
    }
    if ("result" in msg && "error" in msg) {
      ctx.addIssue({ code: "custom", message: "a response has either a result or an error, never both", path: ["error"] });
    }
    if (isReply && (msg.id === undefined || msg.id === null)) {
      ctx.addIssue({ code: "custom", message: "a response needs the id of the request it answers", path: ["id"] });
    }
  })
  .meta({ id: "JsonRpcMessage", description: "One JSON-RPC 2.0 message: request, notification or response." });
export type JsonRpcMessage = z.infer<typeof JsonRpcMessage>;

/**
 * A JSON-RPC message from its text, checked against the schema above, or the 400 problem a route answers
 * for a body that is not one (the same words: `Malformed JSON in request body`, or `json:` and the fields).
 * The relay reads its message here, in the machine's object, once: the route hands it the body's text
 * (docs/architecture.md, "The relay's message as text").
 */
export function readJsonRpcMessage(text: string): { ok: true; message: JsonRpcMessage } | { ok: false; problem: ProblemInit } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, problem: { code: "invalid_request", detail: "Malformed JSON in request body" } };
  }
  const common = commonJsonRpcMessage(value);
  if (common) return { ok: true, message: common };
  const parsed = JsonRpcMessage.safeParse(value);
  if (parsed.success) return { ok: true, message: parsed.data };
  const { detail, errors } = describeIssues(parsed.error);
  return { ok: false, problem: { code: "invalid_request", detail: `json: ${detail}`, extensions: { errors } } };
}

/** `JsonRpcMessage`'s own keys, in its order (which is the order of what it gives back). */
const MESSAGE_KEYS = ["jsonrpc", "id", "method", "params", "result", "error"];

/**
 * The common JSON-RPC message, checked by hand (zod has no JIT in workerd, and the relay reads a message
 * every time): only its own keys, in the schema's order (so that what it gives back is key for key what the
 * schema gives: the frame to the agent is its JSON), `jsonrpc` "2.0", an id of a string, a finite number
 * or null, and either a non-empty method and no result or error, or one of result and error with an id.
 * Anything else gets null, and the schema decides and names what is wrong. It never accepts what the schema
 * refuses (light-checks.test.ts holds the two to the same answers).
 */
export function commonJsonRpcMessage(value: unknown): JsonRpcMessage | null {
  if (!isJsonObject(value)) return null;
  let at = 0;
  for (const key of Object.keys(value)) {
    while (at < MESSAGE_KEYS.length && MESSAGE_KEYS[at] !== key) at++;
    if (at === MESSAGE_KEYS.length) return null; // another key, or one out of the schema's order
  }
  const msg = value;
  if (msg.jsonrpc !== "2.0") return null;
  const hasId = "id" in msg;
  const { id } = msg;
  if (hasId && !(typeof id === "string" || id === null || (typeof id === "number" && Number.isFinite(id)))) return null;
  if ("params" in msg && msg.params === undefined) return null;
  const isReply = "result" in msg || "error" in msg;
  if ("method" in msg) {
    if (typeof msg.method !== "string" || msg.method.length === 0 || isReply) return null;
  } else if (!isReply || "result" in msg === "error" in msg || !hasId || id === null) return null;
  if (("result" in msg && msg.result === undefined) || ("error" in msg && msg.error === undefined)) return null;
  return msg as JsonRpcMessage;
}

/** The ACP session an object (a message's params, an answer's result) names, when it names one. */
export function sessionIdIn(value: unknown): string | null {
  if (typeof value !== "object" || value === null) return null;
  const sessionId = (value as { sessionId?: unknown }).sessionId;
  return typeof sessionId === "string" ? sessionId : null;
}

/** A request expects an answer; notifications and responses do not. */
export function isJsonRpcRequest(msg: JsonRpcMessage): msg is JsonRpcMessage & { method: string; id: string | number } {
  return msg.method !== undefined && msg.id !== undefined && msg.id !== null;
}

export const AcpServer = resource("AcpServer", {
  serverId: z.string(),
  agent: AgentId,
  createdAtMs: z.number().int(),
  processId: z.string().optional(),
  connection: z
    .object({ openedBy: z.string().describe("the name of the token that opened it") })
    .optional()
    .describe("set for a connection of ACP's remote transport (`/acp`): only the token that opened it uses it; an admin sees everyone's"),
});
export type AcpServer = z.infer<typeof AcpServer>;

export const AcpServerList = resource("AcpServerList", { servers: z.array(AcpServer) });
export type AcpServerList = z.infer<typeof AcpServerList>;
