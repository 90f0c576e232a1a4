/**
 * Follows a stream of changes (`GET /v1/sessions/events`) while the page is looked at, and calls `changed`
 * after each burst of them: the caller reads its list again. The stream ends after a quiet while, or when
 * there is nothing to watch; it is opened again by itself (at once after one that said something, after
 * 30 s after one that said nothing, backing off after failures), and closed while the page is hidden, so
 * an unwatched tab keeps no machine awake.
 */
import { useEffect, useRef } from "preact/hooks";
import { followSse } from "./api";

/** Changes within this long of each other are one read of the list. */
const BURST_MS = 200;

export function useLiveChanges(path: string, changed: () => void): void {
  const latest = useRef(changed);
  latest.current = changed;
  useEffect(() => {
    let following: AbortController | null = null;
    let reopen: ReturnType<typeof setTimeout> | null = null;
    // A burst's read waits here; it is dropped with the stream (a page hidden, or the view gone at sign-out).
    let burst: ReturnType<typeof setTimeout> | null = null;
    const dropBurst = () => {
      if (burst) clearTimeout(burst);
      burst = null;
    };
    let failures = 0;
    let stopped = false;
    const open = () => {
      if (stopped || following || document.visibilityState !== "visible") return;
      const mine = new AbortController();
      following = mine;
      let said = 0;
      const onEvent = () => {
        said++;
        if (burst) return;
        burst = setTimeout(() => {
          burst = null;
          latest.current();
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
