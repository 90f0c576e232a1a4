/**
 * Answers that wait for the stream (docs/architecture.md, "Sessions"): the agent's answer to a prompt can
 * reach the machine's object before the last updates it wrote before it (they come by the recorder's
 * subscription). A turn's end waits, briefly, until the recorder has them: its usage and last words.
 */
export class CatchUp {
  private readonly waiting = new Map<string, { seq: number; resolve: () => void }[]>();

  /** Resolves once `cursor()` of the server reaches `seq`, or after `timeoutMs`. */
  wait(serverId: string, seq: number, cursor: number | null, timeoutMs: number): Promise<void> {
    if (cursor === null || cursor >= seq) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = { seq, resolve: () => resolve() };
      this.waiting.set(serverId, [...(this.waiting.get(serverId) ?? []), waiter]);
      setTimeout(() => {
        this.keep(serverId, this.waiting.get(serverId)?.filter((w) => w !== waiter) ?? []);
        resolve();
      }, timeoutMs);
    });
  }

  /** The recorder has the server's stream up to `cursor`. */
  reached(serverId: string, cursor: number): void {
    const waiting = this.waiting.get(serverId);
    if (!waiting) return;
    const [due, left] = [waiting.filter((w) => w.seq <= cursor), waiting.filter((w) => w.seq > cursor)];
    for (const w of due) w.resolve();
    this.keep(serverId, left);
  }

  private keep(serverId: string, left: { seq: number; resolve: () => void }[]): void {
    if (left.length) this.waiting.set(serverId, left);
    else this.waiting.delete(serverId);
  }
}
