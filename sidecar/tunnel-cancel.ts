/**
 * A call's cancellation (the worker's `cancel` frame, when its deadline passed): what a handler learns of it
 * through its `CallContext`. Every relayed message is a call and almost none is cancelled, so nothing is
 * made until a handler asks: `onCancel` keeps a listener, `signal` makes an AbortSignal (an AbortController
 * and its listener cost a call a few µs of the sidecar's CPU, each time).
 */

/**
 * What a handler learns of its call besides the arguments: `signal` aborts when the worker cancels it;
 * `onCancel` says the same to a listener, without an AbortSignal made for every call.
 */
export interface CallContext {
  readonly signal: AbortSignal;
  onCancel(listener: () => void): void;
}

export class CallCancel implements CallContext {
  private controller: AbortController | null = null;
  private listeners: (() => void)[] = [];
  private done = false;

  /** The worker cancelled the call. */
  get cancelled(): boolean {
    return this.done;
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.done) this.controller.abort();
    return this.controller.signal;
  }

  /** `listener` is called once when the worker cancels the call (at once, if it did already). */
  readonly onCancel = (listener: () => void): void => {
    if (this.done) listener();
    else this.listeners.push(listener);
  };

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.controller?.abort();
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}
