/**
 * The dashboard's one reconnect policy (docs/architecture.md, "The dashboard"): a stream or socket that
 * ended or dropped is opened again after a wait that doubles on each failure up to a ceiling, and starts
 * over once it delivers. The session's transcript, the live sessions list and the terminal all follow it
 * (they had three hand-made loops, each with its own numbers). `useFollow` is the views' hook over it.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, errorText, followSse } from "./api";

export interface Backoff {
  /** The wait after a stream that delivered something, and the first wait after a failure. */
  firstMs: number;
  /** The longest wait between tries. */
  maxMs: number;
  /**
   * The wait after a stream that ended by itself having said nothing (the server closes idle streams):
   * without it, such an end backs off as a failure does.
   */
  quietMs?: number;
}

/** What the views use: 1 s, 2, 4, … up to 30 s. */
export const STREAM_BACKOFF: Backoff = { firstMs: 1_000, maxMs: 30_000 };

/** How a try ended: it delivered (and then ended), it ended having said nothing, or it failed. */
export type TryOutcome = "said" | "quiet" | "failed";

/** The wait before the next try, given the last wait (null: none yet) and how the try ended. */
export function nextWaitMs(policy: Backoff, lastMs: number | null, outcome: TryOutcome): number {
  if (outcome === "said") return policy.firstMs;
  if (outcome === "quiet" && policy.quietMs !== undefined) return policy.quietMs;
  return lastMs === null ? policy.firstMs : Math.min(lastMs * 2, policy.maxMs);
}

export interface FollowAgainHandlers {
  onEvent(event: string, data: unknown): void;
  /** The stream failed; it is tried again in `retryInMs`, or never (null) when the API refused it for good. */
  onDown(error: unknown, retryInMs: number | null): void;
}

/**
 * A refusal that asking again cannot change: a bad request, no (or no longer a) sign-in, no access, nothing
 * there. A stream refused so is not asked for again; anything else (the service away, a conflict with a
 * machine that is reconnecting, too many requests) is.
 */
export const isFinalRefusal = (err: unknown): boolean => err instanceof ApiError && [400, 401, 403, 404, 410].includes(err.status);

/**
 * Follows the SSE stream at `path` until `signal` aborts, opening it again by `policy` whenever it ends or
 * fails. Each reopening carries `Last-Event-ID` (the last event id seen), so the server sends on from
 * there: a reader keyed by id (the transcript's entries by seq) sees nothing twice.
 */
export async function followAgain(path: string, handlers: FollowAgainHandlers, policy: Backoff, signal: AbortSignal): Promise<void> {
  let lastId: string | null = null;
  let waitMs: number | null = null;
  while (!signal.aborted) {
    let said = false;
    let outcome: TryOutcome;
    try {
      await followSse(
        path,
        (event, data, id) => {
          said = true;
          if (id !== null) lastId = id;
          handlers.onEvent(event, data);
        },
        signal,
        lastId,
      );
      outcome = said ? "said" : "quiet";
    } catch (err) {
      if (signal.aborted) return;
      if (isFinalRefusal(err)) return handlers.onDown(err, null);
      outcome = "failed";
      // A stream that delivered before it dropped starts the backoff over: it was there a moment ago.
      waitMs = nextWaitMs(policy, said ? null : waitMs, "failed");
      handlers.onDown(err, waitMs);
    }
    if (outcome !== "failed") waitMs = nextWaitMs(policy, waitMs, outcome);
    await sleep(waitMs ?? policy.firstMs, signal);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

/** A refusal is the API's word; anything else (no network, a gateway's 5xx) is an outage. */
export const isOutage = (err: unknown): boolean => !(err instanceof ApiError) || err.status >= 502;

export interface FollowOptions {
  /** A change of this value follows the stream from the start again (the same path asked anew). */
  again?: unknown;
  /**
   * Open it again whenever it ends or drops, by this policy (follow.ts), resuming with `Last-Event-ID`;
   * without it, the stream is followed once.
   */
  reconnect?: Backoff;
}

export interface FollowStatus {
  /** The stream ended by itself (followed once: a process's logs after it exited), or was refused for good. */
  ended: boolean;
  /** Why it last failed ("" when it did not, or delivered since). */
  error: string;
  /** It failed for want of the service or the network (not a refusal): what is shown may be old. */
  outage: boolean;
  /** While reconnecting after a failure: when the next try is (cleared by the next event); null when none is. */
  retryInMs: number | null;
}

const FOLLOWING: FollowStatus = { ended: false, error: "", outage: false, retryInMs: null };

/**
 * Follows the stream at `path` (none while it is null) with `onEvent`, until the path (or `again`) changes
 * or the view goes; with `reconnect`, through every drop, saying while it is down.
 */
export function useFollow(path: string | null, onEvent: (event: string, data: unknown) => void, options: FollowOptions = {}): FollowStatus {
  const [status, setStatus] = useState(FOLLOWING);
  const latest = useRef(onEvent);
  latest.current = onEvent;
  const policy = useRef(options.reconnect);
  policy.current = options.reconnect;
  useEffect(() => {
    setStatus(FOLLOWING);
    if (path === null) return;
    const controller = new AbortController();
    const reconnect = policy.current;
    if (reconnect) {
      const handlers = {
        onEvent: (event: string, data: unknown) => {
          // Back: the outage note goes (setting the same status again draws nothing).
          setStatus(FOLLOWING);
          latest.current(event, data);
        },
        onDown: (err: unknown, retryInMs: number | null) => setStatus({ ended: retryInMs === null, error: errorText(err), outage: isOutage(err), retryInMs }),
      };
      void followAgain(path, handlers, reconnect, controller.signal);
    } else {
      followSse(path, (event, data) => latest.current(event, data), controller.signal).then(
        () => setStatus({ ...FOLLOWING, ended: true }),
        (err) => {
          if (!controller.signal.aborted) setStatus({ ended: true, error: errorText(err), outage: isOutage(err), retryInMs: null });
        },
      );
    }
    return () => controller.abort();
  }, [path, options.again]);
  return status;
}
