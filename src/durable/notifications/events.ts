/**
 * What happened, as each subscription reads it (docs/architecture.md, "Notifications"): who is told (a
 * subscription's events, machines, its token's scope and expiry, muted or not) and the payload they get.
 */
import type { EventType, NotificationPayload, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { summaryText, type TurnChanges } from "@agent-runtime/protocol/review";
import type { PendingRequest, Session } from "@agent-runtime/protocol/sessions";
import type { LoginMethod, LoginQuestion } from "@agent-runtime/protocol/logins";
import type { TurnUsage } from "@agent-runtime/protocol/usage";

export type RuntimeEvent =
  | { type: "permission.requested"; machine: string; session: Session; permission: PendingRequest }
  | { type: "elicitation.requested"; machine: string; session: Session; question: PendingRequest }
  | { type: "agent.login"; machine: string; session: Session; methods: LoginMethod[] }
  /** An agent's own login flow asks a person to open a page: no session yet, the agent's login is where it shows. */
  | { type: "agent.login"; machine: string; agent: string; methods: LoginMethod[]; question: LoginQuestion }
  | {
      type: "turn.finished";
      machine: string;
      session: Session;
      stopReason: string | null;
      durationMs: number | null;
      lastLine: string | null;
      changes?: TurnChanges | null;
      usage?: TurnUsage | null;
    }
  | { type: "turn.failed"; machine: string; session: Session; message: string }
  | { type: "sandbox.blocked"; machine: string; session: Session; kind: "network" | "file"; target: string; reason: string }
  | { type: "machine.offline" | "machine.online"; machine: string };

/** Does this subscription hear of this event? */
export function hears(target: SubscriptionTarget, event: EventType, machine: string, nowMs: number): boolean {
  if (target.muted) return false;
  if (target.expiresAtMs !== null && target.expiresAtMs <= nowMs) return false;
  if (!target.events.includes(event)) return false;
  if (target.scope !== "*" && !target.scope.includes(machine)) return false;
  return target.machines === null || target.machines.includes(machine);
}

/**
 * Text someone else wrote (a prompt, the agent's words), quoted into `text` on one line, cut, and made
 * inert: it cannot open a Slack control sequence (`<url|label>`, `<!channel>`, `<@U…>`: `&`, `<` and `>` are
 * Slack's escapes), a Markdown link (`[label](url)`: the brackets are escaped), or a mass mention
 * (`@everyone`, `@here`, `@channel`: a zero-width joiner after the `@`). The payload's own fields keep the
 * words as they were.
 */
export function quote(text: string | null | undefined, max = 120): string {
  const one = (text ?? "").replace(/\s+/g, " ").trim();
  const cut = one.length > max ? `${one.slice(0, max - 1)}…` : one;
  return cut
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/([[\]])/g, "\\$1")
    .replace(/@(everyone|here|channel)\b/gi, "@\u200d$1");
}

/** Slack's link syntax: `<url|label>` (and its three reserved characters escaped in the label). */
function link(url: string, label: string): string {
  return `<${url}|${label.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")}>`;
}

export function payloadOf(event: RuntimeEvent, baseUrl: string, id: string, atMs: number): NotificationPayload {
  const at = new Date(atMs).toISOString();
  if (event.type === "agent.login" && !("session" in event)) {
    // The agent's login in the dashboard (its machine's agents), where the page is opened and answered.
    const url = `${baseUrl}/machines/${encodeURIComponent(event.machine)}/agents`;
    return {
      id,
      event: event.type,
      at,
      machine: event.machine,
      agent: event.agent,
      session: null,
      login: { methods: event.methods, question: event.question },
      url,
      // The page's address is the agent's text: quoted (inert), never made a link here; the payload keeps it as it is.
      text: `${event.agent} on ${event.machine} asks you to open ${quote(event.question.url, 300)} to log it in, then answer ${link(url, "Log in")}`,
    };
  }
  if (!("session" in event)) {
    const url = `${baseUrl}/machines/${encodeURIComponent(event.machine)}`;
    const text = `Machine ${event.machine} ${event.type === "machine.offline" ? "went offline" : "is back online"} ${link(url, "Dashboard")}`;
    return { id, event: event.type, at, machine: event.machine, agent: null, session: null, url, text };
  }
  const { session } = event;
  // The session's own address in the dashboard: it opens at the question, if one waits.
  const url = `${baseUrl}/sessions/${encodeURIComponent(session.id)}`;
  const who = `${session.agent} on ${event.machine}`;
  const named = session.title ? ` (“${quote(session.title, 60)}”)` : "";
  const base = {
    id,
    event: event.type,
    at,
    machine: event.machine,
    agent: session.agent,
    session: { id: session.id, sessionId: session.sessionId, title: session.title },
    url,
  };
  switch (event.type) {
    case "permission.requested":
      return {
        ...base,
        permission: { requestId: event.permission.requestId, title: event.permission.title, options: event.permission.options },
        text: `${who} asks: ${quote(event.permission.title)}${named} ${link(url, "Answer")}`,
      };
    case "turn.finished":
      return {
        ...base,
        turn: {
          stopReason: event.stopReason,
          durationMs: event.durationMs,
          lastLine: event.lastLine,
          changes: event.changes ?? null,
          usage: event.usage ?? null,
        },
        text: `${who} finished${named}${event.changes ? ` (${summaryText(event.changes)})` : ""}${costText(event.usage)}${event.lastLine ? `: ${quote(event.lastLine)}` : ""} ${link(url, "Open")}`,
      };
    case "elicitation.requested":
      return {
        ...base,
        question: { requestId: event.question.requestId, title: event.question.title, mode: event.question.elicitation?.mode ?? null },
        text: `${who} asks: ${quote(event.question.title)}${named} ${link(url, "Answer")}`,
      };
    case "agent.login":
      return {
        ...base,
        login: { methods: event.methods },
        text: `${who} must be logged in before it starts${named} ${link(url, "Log in")}`,
      };
    case "turn.failed":
      return { ...base, text: `${who} failed${named}: ${quote(event.message)} ${link(url, "Open")}` };
    case "sandbox.blocked":
      return {
        ...base,
        sandbox: { kind: event.kind, target: event.target, reason: event.reason },
        text: `${who}: its sandbox refused ${quote(event.target)}${named} ${link(url, "Open")}`,
      };
  }
}

/** A turn's cost, as a notification's line says it: ` ($0.0042)`, nothing when the agent reported none. */
function costText(usage: TurnUsage | null | undefined): string {
  const cost = usage?.cost;
  if (!cost) return "";
  // Cents for what costs cents; two significant digits for less (a mock's turn costs $0.00002).
  const amount = cost.amount >= 0.01 ? cost.amount.toFixed(2) : String(Number(cost.amount.toPrecision(2)));
  return cost.currency === "USD" ? ` ($${amount})` : ` (${amount} ${cost.currency})`;
}
