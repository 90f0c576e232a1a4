/**
 * Calls waiting for their answer, owned in one place for their whole life: each has a deadline, can be
 * settled once (by its answer, a cancel, or a failure of everything in flight), and is forgotten when
 * settled. The machine's Durable Object keeps its calls to the sidecar here, the sidecar its ACP
 * requests waiting for the agent's response (docs/architecture.md, "One call").
 */
import type { ProblemInit } from "./problems";

export type Outcome<T> = { ok: true; value: T } | { ok: false; problem: ProblemInit };

interface Entry<T, M> {
  meta: M;
  resolve: (outcome: Outcome<T>) => void;
  timer: ReturnType<typeof setTimeout> | null;
}

export class PendingCalls<K, T, M = undefined> {
  private readonly entries = new Map<K, Entry<T, M>>();

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /**
   * Wait for `key`'s answer. At the deadline the call is settled with `onDeadline`'s problem (which may
   * also tell the other side to stop). A key already waiting is the caller's mistake: it throws.
   */
  wait(key: K, meta: M, timeoutMs: number | null, onDeadline?: (key: K, meta: M) => ProblemInit): Promise<Outcome<T>> {
    if (this.entries.has(key)) throw new Error(`a call with key ${String(key)} is already waiting`);
    return new Promise((resolve) => {
      const timer =
        timeoutMs === null
          ? null
          : setTimeout(() => {
              const entry = this.entries.get(key);
              if (entry)
                this.settle(key, { ok: false, problem: onDeadline?.(key, entry.meta) ?? { code: "timeout", detail: `no answer within ${timeoutMs} ms` } });
            }, timeoutMs);
      this.entries.set(key, { meta, resolve, timer });
    });
  }

  /** Settle one call; false when it was not waiting (answered already, timed out, cancelled). */
  settle(key: K, outcome: Outcome<T>): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    if (entry.timer) clearTimeout(entry.timer);
    entry.resolve(outcome);
    return true;
  }

  /** Settle every call for which `pick` has an outcome (all of them when it always has one). */
  settleAll(pick: (meta: M, key: K) => Outcome<T> | null): number {
    let settled = 0;
    for (const [key, entry] of [...this.entries]) {
      const outcome = pick(entry.meta, key);
      if (outcome && this.settle(key, outcome)) settled++;
    }
    return settled;
  }

  meta(key: K): M | undefined {
    return this.entries.get(key)?.meta;
  }

  setMeta(key: K, meta: M): void {
    const entry = this.entries.get(key);
    if (entry) entry.meta = meta;
  }

  /** Every waiting call, oldest first (the order they were made in). */
  *waiting(): IterableIterator<[K, M]> {
    for (const [key, entry] of this.entries) yield [key, entry.meta];
  }
}
