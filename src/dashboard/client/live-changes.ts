/**
 * Follows a stream of changes (`GET /v1/sessions/events`) while the page is looked at, and calls `changed`
 * after each burst of them with what they said: the caller reads its lists again. The stream ends after a
 * quiet while, or when there is nothing to watch; it is opened again by itself (at once after one that said
 * something, after 30 s after one that said nothing, backing off after failures), and closed while the page
 * is hidden, so an unwatched tab keeps no machine awake.
 *
 * A tab opens one such stream (the shell's): views that follow a machine's presence or its ports listen to
 * what it hears through `LiveEvents` instead of opening their own.
 */
import { createContext } from "preact";
import { useContext, useEffect, useRef } from "preact/hooks";
import { followSse } from "./api";

/** Changes within this long of each other are one read of the list. */
const BURST_MS = 200;

/** One change the stream said: `session` (a session's state), `machine` (it came or went), `ports` (what listens on it). */
export interface LiveEvent {
  event: string;
  machine: string | null;
}

/** The machine a change names (the page bundles no zod: its first view stays small). */
function machineOf(data: unknown): string | null {
  const machine = typeof data === "object" && data !== null && "machine" in data ? data.machine : null;
  return typeof machine === "string" ? machine : null;
}

export function useLiveChanges(path: string, changed: (events: LiveEvent[]) => void): void {
  const latest = useRef(changed);
  latest.current = changed;
  useEffect(() => {
    let following: AbortController | null = null;
    let reopen: ReturnType<typeof setTimeout> | null = null;
    // A burst's read waits here; it is dropped with the stream (a page hidden, or the view gone at sign-out).
    let burst: ReturnType<typeof setTimeout> | null = null;
    let heard: LiveEvent[] = [];
    const dropBurst = () => {
      if (burst) clearTimeout(burst);
      burst = null;
      heard = [];
    };
    let failures = 0;
    let stopped = false;
    const open = () => {
      if (stopped || following || document.visibilityState !== "visible") return;
      const mine = new AbortController();
      following = mine;
      let said = 0;
      const onEvent = (event: string, data: unknown) => {
        said++;
        heard.push({ event, machine: machineOf(data) });
        if (burst) return;
        burst = setTimeout(() => {
          const events = heard;
          burst = null;
          heard = [];
          latest.current(events);
        }, BURST_MS);
      };
      followSse(path, onEvent, mine.signal)
        .then(() => (failures = 0))
        .catch(() => failures++)
        .finally(() => {
          if (following === mine) following = null;
          if (stopped || mine.signal.aborted) return;
          const wait = failures > 0 ? Math.min(1000 * 2 ** failures, 30_000) : said > 0 ? 1000 : 30_000;
          reopen = setTimeout(open, wait);
        });
    };
    const onVisibility = () => {
      if (document.visibilityState === "visible") return open();
      following?.abort();
      following = null;
      dropBurst();
    };
    open();
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      stopped = true;
      following?.abort();
      dropBurst();
      if (reopen) clearTimeout(reopen);
      document.removeEventListener("visibilitychange", onVisibility);
    };
  }, [path]);
}

/** What the tab's one stream hears, handed to the views that follow it. */
export class LiveBus {
  private readonly listeners = new Set<(events: LiveEvent[]) => void>();

  publish(events: LiveEvent[]): void {
    for (const listener of this.listeners) listener(events);
  }

  subscribe(listener: (events: LiveEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export const LiveEvents = createContext<LiveBus | null>(null);

/**
 * Calls `changed` when the tab's stream says something of `machine` (it came or went, or its ports
 * changed; `kinds` narrows which).
 */
export function useMachineEvents(machine: string, kinds: readonly string[], changed: () => void): void {
  const bus = useContext(LiveEvents);
  const latest = useRef(changed);
  latest.current = changed;
  const key = kinds.join(",");
  useEffect(
    () => bus?.subscribe((events) => events.some((e) => e.machine === machine && key.split(",").includes(e.event)) && latest.current()),
    [bus, machine, key],
  );
}
