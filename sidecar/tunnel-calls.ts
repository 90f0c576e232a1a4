/**
 * The calls the worker sent this sidecar: each runs once, however often it is sent. The worker re-sends
 * only calls it has no answer for, right after reconnecting (it gives up after its 15 s grace, and the
 * backoff is at most 6.25 s): an answered call is remembered a minute, with room to spare.
 *
 * A busy tunnel answers thousands of calls a minute (every relayed ACP message is one), so what is
 * remembered of an answered call is its answer and when, nothing else: the promise, the cancellation and
 * their closures held ~300 bytes more per call (0.9 MB after 3000 calls, bench/README.md).
 */
import { CallCancel } from "./tunnel-cancel";

/** How long an answered call is remembered, so a call re-sent after a reconnect is not run twice. */
export const CALL_MEMORY_MS = 60_000;

type Answer = string | Uint8Array;

interface RunningCall {
  answer: Promise<Answer>;
  cancel: CallCancel;
}

interface AnsweredCall {
  /** null: the worker cancelled the call, and nobody waits for its answer any more. */
  answer: Answer | null;
  answeredAtMs: number;
}

export class TunnelCalls {
  private readonly running = new Map<string, RunningCall>();
  private readonly answered = new Map<string, AnsweredCall>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly memoryMs = CALL_MEMORY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The answer to call `id`, run by `run` unless it runs already or was answered lately (then the same
   * answer); null when the worker cancelled it. A read-only call is not remembered once answered: asked
   * again, it runs again.
   * `run` never rejects: a failed call's answer is its error frame.
   */
  async serve(id: string, readOnly: boolean, run: (cancel: CallCancel) => Promise<Answer>): Promise<Answer | null> {
    const done = this.answered.get(id);
    if (done) return done.answer;
    let call = this.running.get(id);
    if (!call) {
      const cancel = new CallCancel();
      call = { answer: run(cancel), cancel };
      this.running.set(id, call);
      this.sweeper ??= setInterval(() => this.forgetOld(), this.memoryMs / 4).unref();
    }
    const answer = await call.answer;
    const kept = call.cancel.cancelled ? null : answer;
    // The first of its senders to learn the answer moves the call to the answered ones.
    if (this.running.get(id) === call) {
      this.running.delete(id);
      if (!readOnly) this.answered.set(id, { answer: kept, answeredAtMs: this.now() });
    }
    return kept;
  }

  /** The worker gave up on call `id`: what it started stops, and it is not answered (again). */
  cancel(id: string): void {
    const call = this.running.get(id);
    if (call) call.cancel.cancel();
    const done = this.answered.get(id);
    if (done) done.answer = null;
  }

  /** Calls remembered now (running or answered), for tests. */
  get size(): number {
    return this.running.size + this.answered.size;
  }

  forgetOld(): void {
    const before = this.now() - this.memoryMs;
    // A Map iterates in insertion order, which is the order of answers: the first one young enough ends the sweep.
    for (const [id, call] of this.answered) {
      if (call.answeredAtMs >= before) break;
      this.answered.delete(id);
    }
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}
