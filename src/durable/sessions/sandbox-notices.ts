/**
 * How often a session's sandbox refusals are told to people away (docs/architecture.md, "Sandboxes"): an
 * agent retrying a refused host could otherwise send a notification a second. Every refusal is still in
 * the transcript and the audit log; notifications of one session are at most one per QUIET_MS.
 */
export const QUIET_MS = 60_000;
const MAX_SESSIONS = 1000;

export class SandboxNotices {
  private readonly lastTold = new Map<string, number>();

  constructor(private readonly quietMs = QUIET_MS) {}

  /** May a refusal in this session be told now? (If so, the next is quiet for `quietMs`.) */
  mayTell(sessionId: string, nowMs = Date.now()): boolean {
    const last = this.lastTold.get(sessionId);
    if (last !== undefined && nowMs - last < this.quietMs) return false;
    this.lastTold.delete(sessionId);
    this.lastTold.set(sessionId, nowMs);
    if (this.lastTold.size > MAX_SESSIONS) this.lastTold.delete(this.lastTold.keys().next().value!);
    return true;
  }
}
