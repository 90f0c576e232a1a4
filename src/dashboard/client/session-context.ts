/** Who is signed in, for every view: what a role cannot do is not shown at all. */
import { createContext } from "preact";
import { useContext, useEffect, useRef } from "preact/hooks";
import { roleAllows } from "@agent-runtime/protocol/roles";
import type { Role, Whoami } from "@agent-runtime/protocol/trust";

export const Me = createContext<Whoami | null>(null);

/** Whether the person signed in holds at least `role`. */
export function useCan(role: Role): boolean {
  const me = useContext(Me);
  return me !== null && roleAllows(me.role, role);
}

/**
 * Runs `load` now and every `everyMs` while the page is looked at, and not at all while it is hidden:
 * an open but unwatched dashboard must not keep machines awake.
 */
export function usePoll(load: () => unknown, deps: unknown[], everyMs = 10_000): void {
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    const run = () => {
      if (document.visibilityState === "visible") void latest.current();
    };
    void latest.current();
    const timer = setInterval(run, everyMs);
    document.addEventListener("visibilitychange", run);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", run);
    };
  }, deps);
}
