/**
 * Sessions (docs/architecture.md, "Sessions"): the record of every ACP session that went through the
 * relay and its transcript, kept by the machine's Durable Object. One schema per resource, used for
 * validation, types and the OpenAPI document.
 */
import { z } from "zod";
import { JsonRpcId } from "./acp";
import { SessionWorktree, TurnChanges } from "./review";
import { SessionSandbox } from "./sandbox-rules";
import { LoginMethod } from "./logins";
import { SessionUsage } from "./usage";
import { AgentId } from "./values";
import { machineOfRoutedId, machineRoutedId } from "./ids";
import { resource, strictResource } from "./resource";

export const SessionState = z
  .enum(["running", "waiting", "idle", "offline", "failed", "closed", "needs_login"])
  .describe(
    "running: a turn is in progress; waiting: the agent asks the person something (see `pending`); idle: between turns; offline: the machine is away; failed: the agent exited mid-turn (see `failure`); closed; needs_login: the agent refused to start it until it is logged in (see `login`; it starts once it is)",
  )
  .meta({ id: "SessionState" });
export type SessionState = z.infer<typeof SessionState>;

export const PermissionOption = resource("PermissionOption", { optionId: z.string(), name: z.string(), kind: z.string() });
export type PermissionOption = z.infer<typeof PermissionOption>;

/** One field of an elicitation's form (ACP's ElicitationPropertySchema, flattened for a form on a phone). */
export const ElicitationField = resource("ElicitationField", {
  name: z.string(),
  type: z.string().describe("string, number, integer, boolean or array (a multi-select)"),
  title: z.string().nullable(),
  description: z.string().nullable(),
  required: z.boolean(),
  options: z.array(z.string()).nullable().describe("the values to choose from, when the schema names them"),
});
export type ElicitationField = z.infer<typeof ElicitationField>;

/** What the agent waits for: a permission (answered with one of `options`) or an elicitation. */
export const PendingRequest = resource("PendingRequest", {
  requestId: JsonRpcId.describe(
    "the JSON-RPC id of the agent's request; answer it with POST /v1/sessions/{id}/permission (a permission) or …/elicitation (a question)",
  ),
  kind: z.enum(["permission", "elicitation"]),
  title: z.string(),
  toolCallId: z.string().nullable(),
  options: z.array(PermissionOption),
  atMs: z.number().int(),
  deadline: z
    .object({ atMs: z.number().int(), onTimeout: z.enum(["allow", "deny", "cancel"]), rule: z.string() })
    .optional()
    .describe("the team's policy answers for the person at `atMs` if nobody did: a permission as its rule says (allow, deny), a question (elicitation) cancel"),
  elicitation: z
    .object({
      mode: z.enum(["form", "url"]),
      message: z.string(),
      fields: z.array(ElicitationField).optional().describe("form: the fields asked for, read from the agent's JSON schema"),
      url: z.string().optional().describe("url: the page the person is asked to open"),
      elicitationId: z.string().optional(),
    })
    .optional()
    .describe("an elicitation: the question, as the agent asked it"),
});
export type PendingRequest = z.infer<typeof PendingRequest>;

/** A runtime session id: `ses-` and 16 hex digits, then `-` and its machine, so any worker can route it. */
export const SessionId = machineRoutedId("SessionId", "ses", "session");

/** The machine a runtime session id names. */
export function machineOfSession(id: string): string {
  return machineOfRoutedId("ses", id);
}

/** A prompt waiting for its machine (or for the turn before it): the first words of it, by whom, since when. */
export const QueuedPrompt = resource("QueuedPrompt", { id: z.string(), text: z.string(), by: z.string(), atMs: z.number().int() });
export type QueuedPrompt = z.infer<typeof QueuedPrompt>;

export const Session = resource("Session", {
  id: SessionId,
  sessionId: z.string().describe("the agent's own ACP sessionId"),
  machine: z.string(),
  agent: AgentId,
  agentVersion: z.string().nullable(),
  serverId: z.string().describe("the relay's server id: POST /v1/acp/{serverId} continues it"),
  cwd: z.string(),
  title: z.string().nullable().describe("the first prompt's text, until the agent names the session"),
  createdBy: z.string().describe("the token that started it"),
  createdAtMs: z.number().int(),
  lastActivityMs: z.number().int(),
  state: SessionState,
  pending: PendingRequest.nullable(),
  failure: z.object({ message: z.string(), stderr: z.string().optional() }).nullable(),
  resumable: z.boolean().describe("the agent can reattach it (session/resume or session/load) after its process is gone"),
  continuedFrom: SessionId.nullable(),
  entries: z.number().int().describe("transcript entries kept"),
  worktree: SessionWorktree.nullable().describe("the git worktree the session runs in, when it started in one"),
  lastChanges: TurnChanges.nullable().describe("what the last turn changed in the session's folder (GET /v1/sessions/{id}/changes for the files)"),
  sandbox: SessionSandbox.nullable().describe(
    "the sandbox its agent runs in: what the team's rules asked (and which rule), and what the machine enforces; null: recorded before sandboxes",
  ),
  queued: z.array(QueuedPrompt).describe("prompts waiting to be sent, in order (POST /v1/sessions/{id}/prompt while the machine is away or a turn runs)"),
  waiting: z
    .object({ kind: z.enum(["permission", "elicitation", "login"]) })
    .nullable()
    .optional()
    .describe("what the session waits for from a person: a permission or a question (`pending`), or its agent's login (`login`)"),
  login: z
    .object({ methods: z.array(LoginMethod) })
    .nullable()
    .optional()
    .describe("needs_login: how its agent can be logged in (POST /v1/agents/{agent}/login)"),
  usage: SessionUsage.nullable().optional().describe("what its turns used, as the agent reported it (null: it reported nothing)"),
});

/** Bounds of a session's prompt queue. */
export const QUEUE_LIMITS = { maxQueued: 20, maxPromptBytes: 256 * 1024 } as const;

/** `POST /v1/sessions/{id}/prompt`: plain text (as a task's prompt), or ACP content blocks as `session/prompt` takes them. */
export const PromptRequest = strictResource("PromptRequest", {
  prompt: z
    .union([
      z.string().min(1).max(QUEUE_LIMITS.maxPromptBytes),
      z
        .array(z.object({ type: z.string().min(1).max(64) }).passthrough())
        .min(1)
        .max(64),
    ])
    .describe('what to say: text ("…"), or ACP ContentBlocks, e.g. [{"type": "text", "text": "…"}]'),
});
export type PromptRequest = z.infer<typeof PromptRequest>;

export const PromptEntry = resource("PromptEntry", {
  id: z.string(),
  state: z.enum(["queued", "sent", "cancelled"]).describe("sent: on its way to the agent now; queued: until the machine is back or the turn before it ends"),
});
export type PromptEntry = z.infer<typeof PromptEntry>;
export type Session = z.infer<typeof Session>;

/** A session the agent itself lists on the machine (`session/list`), e.g. one started in a terminal. */
export const DiscoveredSession = resource("DiscoveredSession", {
  agent: AgentId,
  sessionId: z.string(),
  cwd: z.string(),
  title: z.string().nullable(),
  updatedAt: z.string().nullable(),
  recorded: SessionId.nullable().describe("the runtime's record of it, when it went through the relay"),
});
export type DiscoveredSession = z.infer<typeof DiscoveredSession>;

export const SessionList = resource("SessionList", {
  sessions: z.array(Session),
  nextCursor: z.string().nullable().describe("pass as ?cursor= for the next page; null on the last"),
  discovered: z.array(DiscoveredSession).optional(),
});
export type SessionList = z.infer<typeof SessionList>;

/** `sandbox`: something the machine's sandbox refused (`data`: `{kind: "network" | "read" | "write", target, detail?}`). */
export const TranscriptEntryKind = z.enum([
  "prompt",
  "text",
  "thought",
  "tool_call",
  "plan",
  "permission",
  "permission_answer",
  "elicitation",
  "elicitation_answer",
  "stop",
  "error",
  "notice",
  "sandbox",
]);
export type TranscriptEntryKind = z.infer<typeof TranscriptEntryKind>;

/**
 * One entry of a transcript. Consecutive text (or thought) chunks are one entry, so an entry may grow
 * after it was first read: readers keep entries by `seq` and replace one they see again.
 */
export const TranscriptEntry = resource("TranscriptEntry", {
  seq: z.number().int().min(1),
  atMs: z.number().int(),
  kind: TranscriptEntryKind,
  text: z.string().optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;

export const TranscriptPage = resource("TranscriptPage", {
  entries: z.array(TranscriptEntry),
  nextAfter: z.number().int().nullable().describe("pass as ?after= for the next page; null when this page reaches the end"),
  compactedThrough: z.number().int().describe("entries up to this sequence were dropped to keep the transcript within its bound"),
});
export type TranscriptPage = z.infer<typeof TranscriptPage>;

export const SessionFilter = z.object({
  machine: z.string().optional(),
  agent: AgentId.optional(),
  state: SessionState.optional(),
  createdBy: z.string().max(128).optional(),
});
export type SessionFilter = z.infer<typeof SessionFilter>;

export const PermissionAnswer = strictResource("PermissionAnswer", {
  requestId: JsonRpcId,
  optionId: z.string().min(1).max(256).nullable().describe("null cancels the request"),
});
export type PermissionAnswer = z.infer<typeof PermissionAnswer>;

/** ACP's ElicitationContentValue: a string, a number, a boolean or a list of strings. */
const ElicitationValue = z.union([z.string().max(65536), z.number(), z.boolean(), z.array(z.string().max(65536)).max(256)]);

export const ElicitationAnswer = strictResource("ElicitationAnswer", {
  requestId: JsonRpcId.optional().describe("the pending request's id (default: the one the session waits on)"),
  action: z.enum(["accept", "decline", "cancel"]),
  content: z.record(z.string().max(256), ElicitationValue).optional().describe("accept, form mode: a value for each field of its schema"),
});
export type ElicitationAnswer = z.infer<typeof ElicitationAnswer>;

/** Bounds of a transcript (docs/architecture.md, "Sessions"): past them the oldest entries are dropped. */
export const TRANSCRIPT_LIMITS = {
  maxEntries: 5_000,
  maxBytes: 4 * 1024 * 1024,
  /** A text entry grows by coalescing up to this many characters, then a new one starts. */
  maxEntryChars: 64 * 1024,
  /** The digest `continue` puts at the head of the new session's first prompt. */
  digestChars: 8_000,
} as const;
