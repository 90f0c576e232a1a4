/**
 * What ACP messages mean to the runtime (docs/architecture.md, "Sessions"), as pure functions over what
 * crossed the wire: an agent's capabilities in its answer to `initialize`, a prompt's text, an answer's
 * result or error, a request that waits for a person, how a person answered it, how a process ended. The
 * machine's session recorder and the sidecar's ACP bridge read messages with these, so each is read one
 * way, and parsed, never cast.
 */
import { CHANGES_META, SessionWorktree, TurnChanges, WORKTREE_META } from "./review";
import { z } from "zod";
import type { ElicitationField, PendingRequest } from "./sessions";
import { jsonAs } from "./json";

/** What the runtime reads of an agent's answer to `initialize`. */
const InitializeAnswer = z.object({
  agentCapabilities: z
    .object({
      loadSession: z.boolean().optional(),
      sessionCapabilities: z
        .object({ resume: z.unknown().optional(), list: z.unknown().optional(), close: z.unknown().optional(), delete: z.unknown().optional() })
        .passthrough()
        .nullish(),
    })
    .passthrough()
    .optional(),
  agentInfo: z.object({ version: z.string().optional() }).passthrough().nullish(),
});

export interface AgentCapabilities {
  /** `session/resume`: reattach without a replay. */
  resume: boolean;
  /** `session/load`: reattach, the agent replaying the conversation. */
  load: boolean;
  /** `session/list`. */
  list: boolean;
  /** `session/close`. */
  close: boolean;
  /** `session/delete`. */
  delete: boolean;
  /** The agent's own version, as it says it (at most 64 characters). */
  version: string | null;
}

/** An agent's capabilities from its answer to `initialize` (anything unreadable reads as absent). */
export function agentCapabilitiesOf(initializeResult: unknown): AgentCapabilities {
  const parsed = InitializeAnswer.safeParse(initializeResult);
  const answer = parsed.success ? parsed.data : {};
  const caps = answer.agentCapabilities;
  return {
    resume: caps?.sessionCapabilities?.resume != null,
    load: caps?.loadSession === true,
    list: caps?.sessionCapabilities?.list != null,
    close: caps?.sessionCapabilities?.close != null,
    delete: caps?.sessionCapabilities?.delete != null,
    version: answer.agentInfo?.version?.slice(0, 64) ?? null,
  };
}

const ContentBlock = z.object({ type: z.string(), text: z.string().optional(), uri: z.string().optional() }).passthrough();

/** The text of a prompt's content blocks (text, and a resource link's address), as a person typed it. */
export function promptText(prompt: unknown): string {
  const blocks = z.array(z.unknown()).safeParse(prompt);
  if (!blocks.success) return "";
  return blocks.data
    .map((raw) => {
      const block = ContentBlock.safeParse(raw);
      if (!block.success) return "";
      if (block.data.type === "text") return block.data.text ?? "";
      return block.data.type === "resource_link" ? (block.data.uri ?? "") : "";
    })
    .join("")
    .trim();
}

const Answer = z.object({ result: z.unknown().optional(), error: z.unknown().optional() }).passthrough();
const ErrorMessage = z.object({ message: z.string() }).passthrough();

/** The answer to a request as the agent sent it (its JSON text): its result, or its error's message. */
export function answerOf(body: string): { result?: unknown; error?: string } {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { error: "the agent's answer was not JSON" };
  }
  const answer = Answer.safeParse(value);
  if (!answer.success) return { error: "the agent's answer was not a JSON-RPC answer" };
  if (answer.data.error !== undefined) {
    const error = ErrorMessage.safeParse(answer.data.error);
    return { error: error.success ? error.data.message : JSON.stringify(answer.data.error) };
  }
  return { result: answer.data.result };
}

/** Why a turn stopped (`end_turn`, `cancelled`, …), from `session/prompt`'s result. */
export function stopReasonOf(result: unknown): string | null {
  const parsed = z.object({ stopReason: z.string() }).passthrough().safeParse(result);
  return parsed.success ? parsed.data.stopReason : null;
}

/**
 * A message's params as an object (an ACP message's params always are; anything else reads as none).
 * On every message the agent writes: a type check, not a copy.
 */
export function paramsOf(message: { params?: unknown }): Record<string, unknown> {
  const p = message.params;
  return typeof p === "object" && p !== null && !Array.isArray(p) ? (p as Record<string, unknown>) : {};
}

const WithMeta = z.object({ _meta: z.record(z.string(), z.unknown()) }).passthrough();

/** What the machine says a turn changed, carried in the turn's answer (`_meta["agent-runtime/changes"]`); null when it says nothing. */
export function turnChangesOf(result: unknown): TurnChanges | null {
  const meta = WithMeta.safeParse(result);
  const parsed = meta.success ? TurnChanges.safeParse(meta.data._meta[CHANGES_META]) : null;
  return parsed?.success ? parsed.data : null;
}

/** The worktree a `session/new` answer says the session runs in (`_meta["agent-runtime/worktree"]`), and its folder. */
export function worktreeOf(result: unknown): (SessionWorktree & { cwd: string }) | null {
  const meta = WithMeta.safeParse(result);
  const parsed = meta.success ? SessionWorktree.extend({ cwd: z.string() }).safeParse(meta.data._meta[WORKTREE_META]) : null;
  return parsed?.success ? parsed.data : null;
}

const Option = z.object({ optionId: z.string(), name: z.unknown().optional(), kind: z.unknown().optional() }).passthrough();
const WaitingParams = z
  .object({
    message: z.unknown().optional(),
    toolCall: z.object({ title: z.unknown().optional(), toolCallId: z.unknown().optional() }).passthrough().nullish(),
    options: z.array(z.unknown()).optional(),
  })
  .passthrough();

/** The methods by which an agent waits for a person. */
export const WAITING_METHODS: ReadonlySet<string> = new Set(["session/request_permission", "elicitation/create"]);

/** A request of the agent's that waits for a person (a permission, a question), as the session record keeps it. */
export function pendingRequestOf(method: string, id: string | number, params: unknown, atMs: number): PendingRequest {
  const parsed = WaitingParams.safeParse(params);
  const p = parsed.success ? parsed.data : {};
  const options = (p.options ?? []).flatMap((raw) => {
    const o = Option.safeParse(raw);
    return o.success ? [{ optionId: o.data.optionId, name: String(o.data.name ?? o.data.optionId), kind: String(o.data.kind ?? "") }] : [];
  });
  const permission = method === "session/request_permission";
  const title = permission ? p.toolCall?.title : p.message;
  const question = permission ? null : elicitationOf(params);
  return {
    requestId: id,
    kind: permission ? "permission" : "elicitation",
    title: String(title ?? (permission ? "Permission requested" : "The agent asks a question")).slice(0, 500),
    toolCallId: typeof p.toolCall?.toolCallId === "string" ? p.toolCall.toolCallId : (question?.toolCallId ?? null),
    options,
    atMs,
    ...(question ? { elicitation: question.elicitation } : {}),
  };
}

const ElicitationParams = z.discriminatedUnion("mode", [
  z.object({ mode: z.literal("form"), message: z.string(), requestedSchema: z.unknown(), toolCallId: z.string().nullish() }).passthrough(),
  z.object({ mode: z.literal("url"), message: z.string(), url: z.string(), elicitationId: z.string(), toolCallId: z.string().nullish() }).passthrough(),
]);

const Property = z
  .object({
    type: z.string(),
    title: z.string().nullish(),
    description: z.string().nullish(),
    enum: z.array(z.string()).nullish(),
    oneOf: z.array(z.object({ const: z.string() }).passthrough()).nullish(),
    items: z
      .object({ enum: z.array(z.string()).nullish(), anyOf: z.array(z.object({ const: z.string() }).passthrough()).nullish() })
      .passthrough()
      .nullish(),
  })
  .passthrough();
const FormSchema = z.object({ properties: z.record(z.string(), z.unknown()).nullish(), required: z.array(z.string()).nullish() }).passthrough();

/** A form's fields from its JSON schema (a property this runtime cannot read is left out). */
export function fieldsOf(schema: unknown): ElicitationField[] {
  const parsed = FormSchema.safeParse(schema);
  if (!parsed.success) return [];
  const required = new Set(parsed.data.required ?? []);
  return Object.entries(parsed.data.properties ?? {}).flatMap(([name, raw]) => {
    const p = Property.safeParse(raw);
    if (!p.success) return [];
    const d = p.data;
    const options = d.enum ?? d.oneOf?.map((o) => o.const) ?? d.items?.enum ?? d.items?.anyOf?.map((o) => o.const) ?? null;
    return [{ name, type: d.type, title: d.title ?? null, description: d.description ?? null, required: required.has(name), options }];
  });
}

/** An `elicitation/create` as the session record keeps it (form: its schema; url: the page), or null when unreadable. */
function elicitationOf(params: unknown): { elicitation: NonNullable<PendingRequest["elicitation"]>; toolCallId: string | null } | null {
  const parsed = ElicitationParams.safeParse(params);
  if (!parsed.success) return null;
  const e = parsed.data;
  const message = e.message.slice(0, 2000);
  const toolCallId = e.toolCallId ?? null;
  if (e.mode === "form") return { elicitation: { mode: "form", message, fields: fieldsOf(e.requestedSchema) }, toolCallId };
  return { elicitation: { mode: "url", message, url: e.url.slice(0, 4096), elicitationId: e.elicitationId }, toolCallId };
}

const PermissionResult = z.object({ outcome: z.object({ outcome: z.string().optional(), optionId: z.string().optional() }).passthrough() }).passthrough();

/** How a person (or a client) answered a waiting request: the outcome and the option chosen, by name. */
export function permissionAnswerOf(
  pending: PendingRequest,
  answer: { result?: unknown; error?: unknown },
): { requestId: PendingRequest["requestId"]; outcome: string; optionId: string | null; name: string | null } {
  const parsed = PermissionResult.safeParse(answer.result);
  const outcome = parsed.success ? parsed.data.outcome : {};
  const optionId = outcome.optionId ?? null;
  return {
    requestId: pending.requestId,
    outcome: answer.error !== undefined ? "error" : (outcome.outcome ?? "cancelled"),
    optionId,
    name: pending.options.find((o) => o.optionId === optionId)?.name ?? null,
  };
}

const ElicitationResult = z.object({ action: z.string(), content: z.record(z.string(), z.unknown()).nullish() }).passthrough();

/**
 * How a question was answered: the action, and which fields were given. Never the values: a form may ask
 * for anything, and the transcript is read by everyone who may read the session.
 */
export function elicitationAnswerOf(
  pending: PendingRequest,
  answer: { result?: unknown; error?: unknown },
): { requestId: PendingRequest["requestId"]; action: string; fields: string[] } {
  const parsed = ElicitationResult.safeParse(answer.result);
  const action = answer.error !== undefined ? "error" : parsed.success ? parsed.data.action : "cancel";
  return { requestId: pending.requestId, action, fields: parsed.success ? Object.keys(parsed.data.content ?? {}) : [] };
}

const ProcessEnd = z.object({ exitCode: z.number().nullish(), signal: z.string().nullish() }).passthrough();

/** How an agent's process ended, in words (`code 1`, `SIGKILL`), from its stream's end; null when it does not say. */
export function exitDescription(endJson: string): string | null {
  const end = jsonAs(endJson, ProcessEnd);
  if (!end) return null;
  if (end.signal) return end.signal;
  return end.exitCode !== undefined && end.exitCode !== null ? `code ${end.exitCode}` : null;
}
