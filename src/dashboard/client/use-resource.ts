/**
 * The views' one way to show what the API says (docs/architecture.md, "The dashboard"): `useResource`
 * reads a resource while the page is looked at and says whether it is loading, refused or out of reach;
 * `useFollow` (follow.ts) follows one stream for as long as a view wants it. Before these, each view kept
 * its own state, note, poll and abort controller for the same few steps.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { errorText } from "./api";
import { isOutage } from "./follow";
import { useMachineEvents } from "./live-changes";
import { usePoll } from "./session-context";

export interface Resource<T> {
  /** The last answer read (kept while the resource is out of reach: the page shows it and says so). */
  data: T | null;
  /** No answer yet. */
  loading: boolean;
  /** Why the last read failed ("" when it did not). */
  error: string;
  /** The last read failed for want of the service or the network (not a refusal): what is shown may be old. */
  outage: boolean;
  /** Read it now (after a change this page made). */
  refetch: () => Promise<void>;
}

export interface ResourceOptions<T> {
  /**
   * How to read it: a typed call (`must(typed.GET(…))`), or one that checks what it reads another way (a
   * document and its ETag). There is no default: an answer's JSON is not a `T` until something checked it.
   */
  read: () => Promise<T>;
  /** Read again this often while the page is looked at. */
  everyMs?: number;
  /** While true, nothing is read but what `refetch` asks (an edit in progress must not be overwritten). */
  hold?: boolean;
  /** Read again at once when any of these changes (e.g. a count the view bumps after a change it made). */
  again?: readonly unknown[];
  /** Read again when the tab's live stream says this of a machine (its ports changed, it came or went). */
  follow?: { machine: string; kinds: readonly string[] };
}

export function useResource<T>(path: string, options: ResourceOptions<T>): Resource<T> {
  const [state, setState] = useState<Omit<Resource<T>, "refetch">>({ data: null, loading: true, error: "", outage: false });
  const latest = useRef(options);
  latest.current = options;
  // Reads that overlap (a poll, then a change the stream said): only the last one asked is shown, so an
  // earlier, slower answer never puts back what has gone.
  const asked = useRef(0);
  const refetch = async () => {
    const mine = ++asked.current;
    try {
      const data = await latest.current.read();
      if (mine === asked.current) setState({ data, loading: false, error: "", outage: false });
    } catch (err) {
      if (mine === asked.current) setState((s) => ({ ...s, loading: false, error: errorText(err), outage: isOutage(err) }));
    }
  };
  // A new path is another resource: nothing of the last one is shown for it, nor a late answer about it.
  useEffect(() => {
    asked.current++;
    setState({ data: null, loading: true, error: "", outage: false });
  }, [path]);
  usePoll(() => (latest.current.hold ? undefined : refetch()), [path, ...(options.again ?? [])], options.everyMs);
  useMachineEvents(options.follow?.machine ?? "", options.follow?.kinds ?? [], () => {
    if (!latest.current.hold) void refetch();
  });
  return { ...state, refetch };
}

export { useFollow } from "./follow";
