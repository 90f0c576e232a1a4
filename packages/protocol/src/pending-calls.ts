/**
 * Calls waiting for their answer, owned in one place for their whole life: each has a deadline, can be
 * settled once (by its answer, a cancel, or a failure of everything in flight), and is forgotten when
 * settled. The machine's Durable Object keeps its calls to the sidecar here, the sidecar its ACP
 * requests waiting for the agent's response (docs/architecture.md, "One call").
 *
 * Deadlines share one timer, set for the earliest of them (and at most `SWEEP_MS` ahead): a call does
 * not set and clear a timer of its own, which in workerd costs more than the rest of this module on the
 * relay's path. When the timer fires, every call whose deadline has come fails, and it is set again for
 * the next one. A timer left set after the last call was answered fires within `SWEEP_MS` and is not set
 * again, so an idle object or process is not kept awake longer than that.
 */
import type { ProblemInit } from "./problems";

export type Outcome<T> = { ok: true; value: T } | { ok: false; problem: ProblemInit };

interface Entry<K, T, M> {
  meta: M;
  resolve: (outcome: Outcome<T>) => void;
  /**
   * When the call fails (`performance.now()` time: a monotonic clock, as each call's own `setTimeout` was,
   * so a step of the wall clock neither delays every deadline nor fails them at once), or null for none.
   */
  deadline: number | null;
  timeoutMs: number | null;
  onDeadline: ((key: K, meta: M) => ProblemInit) | undefined;
}

/** The longest the shared timer is set ahead: how long it may outlive the last call. */
export const SWEEP_MS = 1_000;

export class PendingCalls<K, T, M = undefined> {
  private readonly entries = new Map<K, Entry<K, T, M>>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** When the timer fires (`performance.now()` time), while it is set. */
  private timerAt = 0;

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
      const now = performance.now();
      const deadline = timeoutMs === null ? null : now + timeoutMs;
      this.entries.set(key, { meta, resolve, deadline, timeoutMs, onDeadline });
      if (deadline !== null && (this.timer === null || deadline < this.timerAt)) this.arm(deadline, now);
    });
  }

  /** Settle one call; false when it was not waiting (answered already, timed out, cancelled). */
  settle(key: K, outcome: Outcome<T>): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
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

  /** The one timer, set for `deadline` or `SWEEP_MS` from now, whichever comes first. */
  private arm(deadline: number, now: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    const at = Math.min(deadline, now + SWEEP_MS);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(at), Math.max(0, at - now));
  }

  /**
   * The timer fired: the calls whose deadline has come fail, in the order they were made. "Now" is at least
   * the time the timer was set for (a timer is never early; a clock read a little behind must not make it
   * wait again).
   */
  private expire(at: number): void {
    this.timer = null;
    const now = Math.max(performance.now(), at);
    let next: number | null = null;
    for (const [key, entry] of [...this.entries]) {
      if (entry.deadline === null) continue;
      if (entry.deadline <= now) {
        const problem = entry.onDeadline?.(key, entry.meta) ?? { code: "timeout", detail: `no answer within ${entry.timeoutMs} ms` };
        // onDeadline may have settled it already (or others): only a call still waiting fails here.
        if (this.entries.get(key) === entry) this.settle(key, { ok: false, problem });
      } else if (next === null || entry.deadline < next) next = entry.deadline;
    }
    // A call made by an onDeadline may have set the timer already, for later than the next deadline.
    if (next !== null && (this.timer === null || next < this.timerAt)) this.arm(next, now);
  }
}
