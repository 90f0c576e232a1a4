/** The tunnel's ACP operations: a client's message to an agent, a server started again, the sessions an agent keeps. */
import { z } from "zod";
import { AcpServerList } from "../acp";
import { LIMITS } from "../limits";
import { SandboxSpec } from "../sandbox";
import { AgentId } from "../values";
import { Deleted, HALF_MINUTE, Id, MINUTE, Nothing, type OpDefinition } from "./define";
import { isJsonObject } from "../json";

export const AcpPostResult = z.union([
  z.object({
    status: z.literal(200),
    body: z.string(),
    /** The last sequence of the server's stream written before this answer (the agent's order, for a reader that wants it). */
    afterSeq: z.number().int().nonnegative().optional(),
  }),
  z.object({ status: z.literal(202) }),
]);
export type AcpPostResult = z.infer<typeof AcpPostResult>;

/**
 * The server's agent is not running (it exited, was stopped idle, or the sidecar restarted) and the
 * message named no agent to start: the machine's object may start it again for a recorded session
 * (docs/architecture.md, "Sessions"), else the client is told to name its agent.
 */
export const AcpNotRunning = z.object({ status: z.literal(404), notRunning: z.literal(true), detail: z.string() });
export type AcpNotRunning = z.infer<typeof AcpNotRunning>;

/** What `acp.post` answers: the agent's answer, or that its agent is not running. */
export const AcpPostAnswer = z.union([...AcpPostResult.options, AcpNotRunning]);
export type AcpPostAnswer = z.infer<typeof AcpPostAnswer>;

/**
 * `acp.post`'s two common answers checked by hand (the relay reads one per message, and zod has no JIT in
 * workerd): the agent's answer `{ status: 200, body, afterSeq? }` (a string, a sequence that is a safe
 * integer ≥ 0) or `{ status: 202 }`, exactly those keys in the schema's order, so that what it gives back
 * is key for key the schema's. Anything else gets null, and `AcpPostAnswer` decides and names what is
 * wrong; it never accepts what the schema refuses (light-checks.test.ts holds the two to the same answers).
 */
export function commonAcpPostAnswer(value: unknown): AcpPostResult | null {
  if (!isJsonObject(value)) return null;
  const answer = value;
  const keys = Object.keys(answer);
  if (answer.status === 202) return keys.length === 1 ? (answer as AcpPostResult) : null;
  if (answer.status !== 200 || typeof answer.body !== "string" || keys[0] !== "status" || keys[1] !== "body") return null;
  if (keys.length === 2) return answer as AcpPostResult;
  const { afterSeq } = answer;
  return keys.length === 3 && keys[2] === "afterSeq" && Number.isSafeInteger(afterSeq) && (afterSeq as number) >= 0 ? (answer as AcpPostResult) : null;
}

export const AcpRestoreArgs = z.object({
  serverId: z.string().min(1).max(256),
  agent: AgentId,
  /** The client's own `initialize` params, sent again as they were. */
  initialize: z.record(z.string(), z.unknown()),
  /** The method the client logged in with (`authenticate`), if it did. */
  authMethodId: z.string().max(256).nullable(),
  sessions: z.array(z.object({ sessionId: z.string().max(1024), cwd: z.string().max(4096), mcpServers: z.array(z.record(z.string(), z.unknown())) })).max(256),
  firstSeq: z.number().int().min(1),
  /** The sandbox the team asks for (docs/architecture.md, "Sandboxes"); the sidecar applies the stricter of it and its owner's floor. */
  sandbox: SandboxSpec.optional(),
});
export type AcpRestoreArgs = z.infer<typeof AcpRestoreArgs>;

export const AcpRestoreResult = z.object({
  /** False when a live server was there already (restored by a call before this one): nothing was done. */
  started: z.boolean(),
  sessions: z.array(z.object({ sessionId: z.string(), how: z.enum(["resume", "load", "none"]), error: z.string().optional() })),
});
export type AcpRestoreResult = z.infer<typeof AcpRestoreResult>;

/** Starting an agent again and reattaching its sessions (a load replays a whole conversation). */
const RESTORE_MS = 180_000;
/** Asking an agent which sessions it keeps starts a process of it. */
const DISCOVER_MS = 90_000;

export const ACP_OPS = {
  /** `awaitId`: the id of a request whose response the caller waits for; null for notifications and responses. */
  "acp.post": {
    deadlineMs: LIMITS.acpTimeoutMs,
    args: z.object({
      serverId: Id,
      agent: AgentId.optional(),
      message: z.string(),
      /** What the worker read of the message when it parsed it, so that the sidecar need not parse it again. */
      method: z.string().max(256).nullable().describe("its method; null for a response"),
      cwd: z.string().max(4096).optional().describe("a session/new or session/load: its cwd"),
      awaitId: z.union([z.string(), z.number(), z.null()]),
      /** Where a server started by this call numbers its messages from: after what its earlier incarnation sent. */
      firstSeq: z.number().int().min(1).optional(),
      /** For a call that starts the server: the sandbox the team asks for; the sidecar applies the stricter of it and its owner's floor. */
      sandbox: SandboxSpec.optional(),
    }),
    result: AcpPostAnswer,
  },
  /**
   * Start a server's agent again and reattach its sessions (docs/architecture.md, "Sessions"): initialize
   * as the client did, log in as before, then `session/resume` or `session/load` each session. What a load
   * replays is not logged again: readers had it.
   */
  "acp.restore": { deadlineMs: RESTORE_MS, args: AcpRestoreArgs, result: AcpRestoreResult },
  /** The sessions an agent itself lists on the machine (`session/list`), by a short-lived process of it. */
  "acp.discover": {
    deadlineMs: DISCOVER_MS,
    readOnly: true,
    args: z.object({ agent: AgentId, cwd: z.string().max(4096).optional() }),
    result: z.object({
      supported: z.boolean(),
      sessions: z.array(z.object({ sessionId: z.string(), cwd: z.string(), title: z.string().nullable(), updatedAt: z.string().nullable() })),
    }),
  },
  "acp.delete": { deadlineMs: MINUTE, args: z.object({ serverId: Id }), result: Deleted },
  "acp.list": { deadlineMs: HALF_MINUTE, readOnly: true, args: Nothing, result: AcpServerList },
} as const satisfies Record<string, OpDefinition>;
