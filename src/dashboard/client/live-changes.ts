/**
 * Follows a stream of changes (`GET /v1/sessions/events`) while the page is looked at, and calls `changed`
 * after each burst of them with what they said: the caller reads its lists again. The stream ends after a
 * quiet while, or when there is nothing to watch; `useFollow` opens it again by itself (`LIVE_BACKOFF`),
 * and it is closed while the page is hidden, so an unwatched tab keeps no machine awake.
 *
 * A tab opens one such stream (the shell's): views that follow a machine's presence or its ports listen to
 * what it hears through `LiveEvents` instead of opening their own.
 */
import { createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import { type Backoff, STREAM_BACKOFF, useFollow } from "./follow";

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

/**
 * The live list's reconnect policy: at once (1 s) after a stream that said something; 30 s after one the
 * server closed for saying nothing (what changes then is read by the poll, and no idle object is woken
 * for it); after failures, 1 s doubling to 30 s.
 */
const LIVE_BACKOFF: Backoff = { ...STREAM_BACKOFF, quietMs: 30_000 };

/** Whether the page is looked at (a hidden tab follows nothing: it must not keep a machine awake). */
function useVisible(): boolean {
  const [visible, setVisible] = useState(() => document.visibilityState === "visible");
  useEffect(() => {
    const onVisibility = () => setVisible(document.visibilityState === "visible");
    document.addEventListener("visibilitychange", onVisibility);
    return () => document.removeEventListener("visibilitychange", onVisibility);
  }, []);
  return visible;
}

export function useLiveChanges(path: string, changed: (events: LiveEvent[]) => void): void {
  const latest = useRef(changed);
  latest.current = changed;
  // A burst's read waits here; it is dropped with the stream (a page hidden, or the view gone at sign-out).
  const burst = useRef<{ timer: ReturnType<typeof setTimeout> | null; heard: LiveEvent[] }>({ timer: null, heard: [] });
  const visible = useVisible();
  useEffect(
    () => () => {
      if (burst.current.timer) clearTimeout(burst.current.timer);
      burst.current = { timer: null, heard: [] };
    },
    [path, visible],
  );
  useFollow(
    visible ? path : null,
    (event, data) => {
      const pending = burst.current;
      pending.heard.push({ event, machine: machineOf(data) });
      if (pending.timer) return;
      pending.timer = setTimeout(() => {
        burst.current = { timer: null, heard: [] };
        latest.current(pending.heard);
      }, BURST_MS);
    },
    { reconnect: LIVE_BACKOFF },
  );
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
