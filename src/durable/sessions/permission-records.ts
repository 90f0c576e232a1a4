/**
 * What an agent's request to a person writes in its session (docs/architecture.md, "Sessions" and "The
 * permission policy"): asked of a person (the session waits, people are told), answered by a rule of the
 * policy (the transcript says which; nobody is told), or answered by a client.
 */
import { elicitationAnswerOf, permissionAnswerOf } from "@agent-runtime/protocol/acp-meaning";
import type { JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { PendingRequest } from "@agent-runtime/protocol/sessions";
import type { RuntimeEvent } from "../notifications/events";
import type { Ruled } from "../policy/permission-gate";
import { parsedOr } from "../storage/stored";
import type { LiveSession, LiveSessions } from "./live-sessions";

/** A person is asked: the session waits for them, and people are told. */
export function recordWaiting(sessions: LiveSessions, session: LiveSession, pending: PendingRequest, now: number, events: (event: RuntimeEvent) => void): void {
  const question = pending.kind === "elicitation";
  session.tail.add(question ? "elicitation" : "permission", now, { data: { ...pending } });
  session.row.pending = JSON.stringify(pending);
  sessions.setState(session, "waiting", now);
  const record = sessions.toSession(session.row);
  if (question) events({ type: "elicitation.requested", machine: record.machine, session: record, question: pending });
  else events({ type: "permission.requested", machine: record.machine, session: record, permission: pending });
}

/** A rule answered for the person: the request and its answer are in the transcript with the rule; the turn goes on. */
export function recordRuled(
  session: LiveSession,
  pending: PendingRequest,
  verdict: NonNullable<Ruled["verdict"]>,
  answered: NonNullable<Ruled["answered"]>,
  now: number,
): void {
  const policy = { decision: verdict.decision, rule: verdict.ruleName, source: verdict.source };
  session.tail.add("permission", now, { data: { ...pending, policy } });
  const outcome = answered.optionId === null ? "cancelled" : "selected";
  session.tail.add("permission_answer", now, { data: { requestId: pending.requestId, outcome, optionId: answered.optionId, name: answered.name, policy } });
  session.row.last_activity = now;
  session.dirty = true;
}

/** A client answered one of the agent's requests: a permission request, if it was the one pending. */
export function recordClientAnswer(sessions: LiveSessions, serverId: string, message: JsonRpcMessage, now: number): void {
  for (const session of sessions.turningOf(serverId)) {
    const pending = parsedOr(PendingRequest, session.row.pending);
    if (!pending || JSON.stringify(pending.requestId) !== JSON.stringify(message.id)) continue;
    if (pending.kind === "elicitation") session.tail.add("elicitation_answer", now, { data: elicitationAnswerOf(pending, message) });
    else session.tail.add("permission_answer", now, { data: permissionAnswerOf(pending, message) });
    session.row.pending = null;
    sessions.setState(session, "running", now);
    return;
  }
}
