/**
 * An answer of the agent's goes out after what the agent wrote before it (docs/architecture.md, "ACP's
 * remote transport"). The answer comes back as the call's result, the agent's stream as subscription
 * events: on their own they can overtake each other (a `session/load` replays the conversation, then
 * answers). This keeps, per server, how far its stream was routed and who waits for it to get further.
 */

/** How long an answer waits for what the agent wrote before it, at most. */
const ORDER_WAIT_MS = 2_000;

export class AnswerOrder {
  /** The highest sequence of each server's stream routed, and who waits for one to be. */
  private readonly routedSeq = new Map<string, number>();
  private readonly waiters = new Map<string, { seq: number; resolve: () => void }[]>();

  /** Resolves once the server's stream is routed up to `seq` (at once without one), or after ORDER_WAIT_MS. */
  after(serverId: string, seq: number | undefined): Promise<void> {
    if (seq === undefined || (this.routedSeq.get(serverId) ?? 0) >= seq) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ORDER_WAIT_MS);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      const waiters = this.waiters.get(serverId) ?? [];
      waiters.push({ seq, resolve: done });
      this.waiters.set(serverId, waiters);
    });
  }

  /** A batch of the server's stream was routed. */
  routed(serverId: string, events: [number, string][]): void {
    const last = events.at(-1)?.[0];
    if (last === undefined) return;
    this.routedSeq.set(serverId, Math.max(last, this.routedSeq.get(serverId) ?? 0));
    const waiters = this.waiters.get(serverId);
    if (!waiters) return;
    const still = waiters.filter((w) => w.seq > last);
    for (const w of waiters) if (w.seq <= last) w.resolve();
    if (still.length) this.waiters.set(serverId, still);
    else this.waiters.delete(serverId);
  }

  /** A connection is over: nothing waits on its stream any more. */
  forget(serverId: string): void {
    this.routedSeq.delete(serverId);
    for (const w of this.waiters.get(serverId) ?? []) w.resolve();
    this.waiters.delete(serverId);
  }
}
