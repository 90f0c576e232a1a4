/** How the dashboard shows sessions and their transcripts: pure functions, tested beside. */
import type { Session, SessionState, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import type { TurnChanges } from "@agent-runtime/protocol/review";
import { summaryText } from "@agent-runtime/protocol/review-text";
import { ago } from "./format";
import { blockText } from "./sandbox-text";

const STATE_RANK: Record<SessionState, number> = { waiting: 0, needs_login: 0, running: 1, failed: 2, idle: 3, offline: 4, closed: 5 };

/** Waiting first (someone has to answer), then running, then the rest by their last activity. */
export function sessionOrder(a: Session, b: Session): number {
  return STATE_RANK[a.state] - STATE_RANK[b.state] || b.lastActivityMs - a.lastActivityMs;
}

/** The tab's title: how many sessions wait for a person, where a glance at the tab bar shows it. */
export const pageTitle = (sessions: readonly Session[]): string => {
  const waiting = sessions.filter((s) => s.state === "waiting").length;
  return waiting ? `(${waiting}) agent-runtime` : "agent-runtime";
};

/** The style an entry is shown with. */
export function entryClass(entry: TranscriptEntry): string {
  if (entry.kind === "text") return "agent";
  if (entry.kind === "sandbox") return "blocked";
  return entry.kind === "prompt" || entry.kind === "thought" || entry.kind === "error" ? entry.kind : "muted";
}

/** An entry's `data` is what the agent sent: read by narrowing, field by field (the first script has no schemas). */
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

const field = (data: Record<string, unknown> | undefined, key: string): string | undefined => {
  const value = data?.[key];
  return typeof value === "string" ? value : undefined;
};

const count = (value: unknown): number | null => (typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null);

/** How a turn ended, in words a person uses. */
const STOP_WORDS: Record<string, string> = {
  end_turn: "Done",
  cancelled: "Cancelled",
  max_tokens: "Stopped: the answer reached its length limit",
  max_turn_requests: "Stopped: too many steps in one turn",
  refusal: "The agent refused",
};

/** What a turn's end says: how it ended, how long it took, what it changed ("3 files, +40 −2"). */
function stopText(d: Record<string, unknown> | undefined): string {
  const reason = field(d, "stopReason");
  const ms = typeof d?.durationMs === "number" ? d.durationMs : 0;
  const changes = turnChangesOf(d);
  const took = ms >= 1000 ? ` in ${Math.round(ms / 100) / 10} s` : "";
  return `${(reason && STOP_WORDS[reason]) ?? (reason ? `Ended (${reason})` : "Ended")}${took}${changes ? ` · ${summaryText(changes)}` : ""}`;
}

/** The summary a turn's end carries, if the machine reported one. */
export function turnChangesOf(d: Record<string, unknown> | undefined): TurnChanges | null {
  const c = d?.changes;
  if (!isRecord(c)) return null;
  const [turn, files, additions, deletions] = [count(c.turn), count(c.files), count(c.additions), count(c.deletions)];
  return turn !== null && files !== null && additions !== null && deletions !== null ? { turn, files, additions, deletions } : null;
}

/** The rule of the permission policy that answered a request, where one did. */
function policyOf(data: Record<string, unknown> | undefined): { decision: string; rule: string } | null {
  const policy = data?.policy;
  if (!isRecord(policy) || typeof policy.decision !== "string" || typeof policy.rule !== "string") return null;
  return { decision: policy.decision, rule: policy.source === "session" ? `the session's ${policy.rule}` : policy.rule };
}

/** " (deny at 14:05 unless answered)" for an ask a rule will answer. */
export function deadlineText(deadline: unknown): string {
  const d = deadline;
  if (!isRecord(d) || typeof d.atMs !== "number" || typeof d.onTimeout !== "string") return "";
  return ` (${d.onTimeout} at ${new Date(d.atMs).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })} unless answered)`;
}

/** An entry as one line of plain text (agent text is Markdown and is rendered instead). */
export function entryText(entry: TranscriptEntry): string {
  const d = entry.data;
  switch (entry.kind) {
    case "tool_call": {
      const status = field(d, "status");
      return `tool: ${field(d, "title") ?? field(d, "toolCallId") ?? ""}${status ? ` (${status})` : ""}`;
    }
    case "plan": {
      const steps = Array.isArray(d?.entries) ? d.entries.filter(isRecord) : [];
      return `plan: ${steps.map((p) => `${p.status === "completed" ? "✓" : "·"} ${field(p, "content") ?? ""}`).join("  ")}`;
    }
    case "permission": {
      const ruled = policyOf(d);
      if (ruled) return `${ruled.decision === "allow" ? "allowed" : "denied"} by ${ruled.rule}: ${field(d, "title") ?? ""}`;
      return `asks: ${field(d, "title") ?? ""}${deadlineText(d?.deadline)}`;
    }
    case "permission_answer":
      return `answered${policyOf(d) ? " for the policy" : ""}: ${field(d, "name") ?? field(d, "optionId") ?? field(d, "outcome") ?? ""}`;
    case "stop":
      return stopText(d);
    case "sandbox":
      return blockText(entry);
    default:
      return entry.text ?? "";
  }
}

/** The transcript with `entry` in its place: one seen again (a text that grew) replaces the old copy. */
export function withEntry(entries: readonly TranscriptEntry[], entry: TranscriptEntry): TranscriptEntry[] {
  const at = entries.findIndex((e) => e.seq >= entry.seq);
  if (at < 0) return [...entries, entry];
  const next = [...entries];
  next.splice(at, entries[at]!.seq === entry.seq ? 1 : 0, entry);
  return next;
}

/** One line about a session: where it runs, which agent, how long ago it moved. */
export const sessionLine = (s: Session, now = Date.now()): string => `${s.machine} · ${s.agent} · ${ago(s.lastActivityMs, now)}`;
