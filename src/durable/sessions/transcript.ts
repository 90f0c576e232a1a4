/**
 * The tail of one session's transcript, in memory (docs/architecture.md, "Sessions"): what an ACP
 * update means for the transcript, consecutive text and thought chunks coalesced into one entry, tool
 * calls updated in place. It knows nothing of storage: it hands out the entries that changed since the
 * last save (`takeUnsaved`) and since the last live delivery (`takeUnsent`).
 */
import { z } from "zod";
import { TRANSCRIPT_LIMITS, type TranscriptEntry, type TranscriptEntryKind } from "@agent-runtime/protocol/sessions";

/** What an ACP `session/update` means for the transcript and the record. */
export type UpdateEffect =
  | { type: "chunk"; kind: "text" | "thought"; text: string; messageId?: string }
  | { type: "tool_call"; toolCallId: string; data: Record<string, unknown> }
  | { type: "tool_call_update"; toolCallId: string; data: Record<string, unknown> }
  | { type: "plan"; data: Record<string, unknown> }
  | { type: "title"; title: string }
  | { type: "ignore" };

const ToolFields = z
  .object({
    toolCallId: z.string(),
    title: z.string().nullish(),
    kind: z.string().nullish(),
    status: z.string().nullish(),
    locations: z.array(z.object({ path: z.string() }).passthrough()).nullish(),
  })
  .passthrough();
const Update = z.object({ sessionUpdate: z.string() }).passthrough();

/** The parts of a tool call a person reads later: what it was, on which files, how it ended (not its full output). */
function toolData(fields: z.infer<typeof ToolFields>): Record<string, unknown> {
  const data: Record<string, unknown> = { toolCallId: fields.toolCallId };
  if (fields.title != null) data.title = fields.title;
  if (fields.kind != null) data.kind = fields.kind;
  if (fields.status != null) data.status = fields.status;
  if (fields.locations?.length) data.locations = fields.locations.map((l) => l.path);
  return data;
}

export function effectOf(update: unknown): UpdateEffect {
  // The hot path first, checked by hand (the cast names the fields read, each checked below before use): a
  // stream in full flow is thousands of text chunks a second.
  if (typeof update === "object" && update !== null) {
    const { sessionUpdate, content, messageId } = update as { sessionUpdate?: unknown; content?: { type?: unknown; text?: unknown }; messageId?: unknown };
    if (sessionUpdate === "agent_message_chunk" || sessionUpdate === "agent_thought_chunk") {
      if (typeof content !== "object" || content === null || content.type !== "text" || typeof content.text !== "string") return { type: "ignore" };
      const kind = sessionUpdate === "agent_message_chunk" ? "text" : "thought";
      // The agent's id of the message (ACP's messageId): kept on the entry, and a new message starts a new entry.
      return typeof messageId === "string"
        ? { type: "chunk", kind, text: content.text, messageId: messageId.slice(0, 256) }
        : { type: "chunk", kind, text: content.text };
    }
  }
  const parsed = Update.safeParse(update);
  if (!parsed.success) return { type: "ignore" };
  const u = parsed.data;
  switch (u.sessionUpdate) {
    case "tool_call":
    case "tool_call_update": {
      const fields = ToolFields.safeParse(u);
      if (!fields.success) return { type: "ignore" };
      return { type: u.sessionUpdate, toolCallId: fields.data.toolCallId, data: toolData(fields.data) };
    }
    case "plan":
      return Array.isArray(u.entries) ? { type: "plan", data: { entries: u.entries } } : { type: "ignore" };
    case "session_info_update":
      return typeof u.title === "string" && u.title.trim() ? { type: "title", title: u.title.trim() } : { type: "ignore" };
    default:
      // user_message_chunk (prompts are recorded from the client's own message), commands, modes, usage.
      return { type: "ignore" };
  }
}

/** Tool calls remembered per session for updates in place; an update to an older one becomes an entry of its own. */
const TOOL_CALLS_KEPT = 64;

export class TranscriptTail {
  /** The last entry, while more of the same may still be added to it (text, thought, plan). */
  private open: TranscriptEntry | null = null;
  private readonly toolCalls = new Map<string, TranscriptEntry>();
  private readonly unsaved = new Map<number, TranscriptEntry>();
  private readonly unsent = new Map<number, TranscriptEntry>();
  /** Someone reads this session live: only then are changes kept for delivery. */
  following = false;
  private lastText: TranscriptEntry | null = null;

  constructor(private nextSeq: number) {}

  /** The last line the agent said (the last text entry this tail saw), for a turn's summary. */
  lastTextLine(): string | null {
    const lines = (this.lastText?.text ?? "")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    return lines.at(-1)?.slice(0, 300) ?? null;
  }

  /** The sequence the next new entry gets. */
  get next(): number {
    return this.nextSeq;
  }

  get hasUnsaved(): boolean {
    return this.unsaved.size > 0;
  }

  add(kind: TranscriptEntryKind, atMs: number, fields: { text?: string; data?: Record<string, unknown> } = {}): TranscriptEntry {
    const entry: TranscriptEntry = { seq: this.nextSeq++, atMs, kind, ...fields };
    this.open = kind === "text" || kind === "thought" || kind === "plan" ? entry : null;
    if (kind === "text") this.lastText = entry;
    this.touch(entry);
    return entry;
  }

  apply(effect: UpdateEffect, atMs: number): void {
    switch (effect.type) {
      case "chunk": {
        const open = this.open;
        const sameMessage = effect.messageId === undefined || open?.data?.messageId === effect.messageId;
        if (open?.kind === effect.kind && sameMessage && (open.text?.length ?? 0) + effect.text.length <= TRANSCRIPT_LIMITS.maxEntryChars) {
          open.text = (open.text ?? "") + effect.text;
          this.touch(open);
        } else {
          this.add(effect.kind, atMs, { text: effect.text, ...(effect.messageId ? { data: { messageId: effect.messageId } } : {}) });
        }
        return;
      }
      case "tool_call": {
        const entry = this.add("tool_call", atMs, { data: effect.data });
        this.toolCalls.set(effect.toolCallId, entry);
        while (this.toolCalls.size > TOOL_CALLS_KEPT) this.toolCalls.delete(this.toolCalls.keys().next().value!);
        return;
      }
      case "tool_call_update": {
        const entry = this.toolCalls.get(effect.toolCallId);
        if (!entry) {
          this.toolCalls.set(effect.toolCallId, this.add("tool_call", atMs, { data: effect.data }));
          return;
        }
        entry.data = { ...entry.data, ...effect.data };
        this.touch(entry);
        return;
      }
      case "plan": {
        // A plan is sent whole each time: the latest replaces the one just before it.
        if (this.open?.kind === "plan") {
          this.open.data = effect.data;
          this.touch(this.open);
        } else {
          this.add("plan", atMs, { data: effect.data });
        }
        return;
      }
      case "title":
      case "ignore":
        return;
    }
  }

  /** Entries changed since the last save, oldest first; they count as saved from now on. */
  takeUnsaved(): TranscriptEntry[] {
    const entries = [...this.unsaved.values()].sort((a, b) => a.seq - b.seq);
    this.unsaved.clear();
    return entries;
  }

  /** Entries changed since the last live delivery (copies: a later chunk must not change what was sent). */
  takeUnsent(): TranscriptEntry[] {
    const entries = [...this.unsent.values()].sort((a, b) => a.seq - b.seq).map((e) => ({ ...e }));
    this.unsent.clear();
    return entries;
  }

  private touch(entry: TranscriptEntry): void {
    this.unsaved.set(entry.seq, entry);
    if (this.following) this.unsent.set(entry.seq, entry);
  }
}

/**
 * A bounded digest of a transcript for `continue` (the first prompt of the new session carries it): the
 * newest prompts and answers that fit in `maxChars`, oldest first.
 */
export function digestOf(title: string | null, entries: TranscriptEntry[], maxChars: number = TRANSCRIPT_LIMITS.digestChars): string {
  const head = `This continues an earlier session${title ? ` ("${title}")` : ""}. The conversation so far:\n`;
  const lines: string[] = [];
  let budget = maxChars - head.length;
  for (let i = entries.length - 1; i >= 0 && budget > 0; i--) {
    const e = entries[i]!;
    const who = e.kind === "prompt" ? "User" : e.kind === "text" ? "Agent" : null;
    if (!who || !e.text) continue;
    let line = `${who}: ${e.text.replace(/\s+/g, " ").trim()}`;
    if (line.length > budget) line = `${line.slice(0, Math.max(0, budget - 1))}…`;
    lines.unshift(line);
    budget -= line.length + 1;
  }
  return `${head}${lines.join("\n")}\n---\n`;
}
