/**
 * What a session's sandbox refused, as the recorder keeps it (docs/architecture.md, "Sandboxes"): a
 * `sandbox` entry in its transcript, a line of the team's audit log and a `sandbox.blocked` event for the
 * people away (rate limited where notifications are sent: sandbox-notices.ts).
 */
import { SandboxBlocked } from "@agent-runtime/protocol/sandbox";
import type { Session } from "@agent-runtime/protocol/sessions";
import type { RuntimeEvent } from "../notifications/events";
import type { LiveSession, LiveSessions } from "./live-sessions";

export function recordSandboxBlocked(
  sessions: LiveSessions,
  session: LiveSession,
  params: Record<string, unknown>,
  now: number,
  tell: { audit: ((session: Session, target: string, reason: string) => void) | undefined; events: (event: RuntimeEvent) => void },
): void {
  const parsed = SandboxBlocked.safeParse(params);
  if (!parsed.success) return;
  const { kind, target, reason } = parsed.data;
  session.tail.add("sandbox", now, { text: `The sandbox refused ${target}: ${reason}`, data: { kind, target, reason } });
  session.row.last_activity = now;
  session.dirty = true;
  const record = sessions.toSession(session.row);
  tell.audit?.(record, target, reason);
  tell.events({ type: "sandbox.blocked", machine: record.machine, session: record, kind, target, reason });
}
