/**
 * Every view of the dashboard has its own address, so a reload, a link in a notification or a bookmark
 * opens the same place. The worker serves the page at each of these paths (src/dashboard/page.ts,
 * DASHBOARD_PATHS); the API lives under /v1, /acp and /machines/<id>/v1, which no view uses.
 */
import type { TargetedMouseEvent } from "preact";
import { useEffect, useState } from "preact/hooks";

export const MACHINE_TABS = ["agents", "processes", "files", "terminal", "ports"] as const;
export type MachineTab = (typeof MACHINE_TABS)[number];
/** The Team view's tabs: the permission policy first, at `/team`, one tap from the navigation. */
export const TEAM_TABS = ["policy", "skills", "mcp", "agents", "notifications"] as const;
export type TeamTab = (typeof TEAM_TABS)[number];

export type Route =
  | { view: "sessions" }
  | { view: "session"; id: string }
  | { view: "changes"; id: string; turn: number | null }
  | { view: "machines" }
  | { view: "machine"; machine: string; tab: MachineTab; query: URLSearchParams }
  | { view: "tasks" }
  | { view: "team"; tab: TeamTab }
  | { view: "admin" }
  | { view: "missing"; path: string };

/** The view a location shows. `/#session=<id>` (links sent before views had paths) still opens that session. */
export function parseRoute(pathname: string, search = "", hash = ""): Route {
  const legacy = /^#session=([^&]+)/.exec(hash);
  if (legacy) return { view: "session", id: decodeURIComponent(legacy[1]!) };
  const parts = pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second, third] = parts;
  if (parts.length === 0 || (first === "sessions" && parts.length === 1)) return { view: "sessions" };
  if (first === "sessions" && second && parts.length === 2) return { view: "session", id: second };
  if (first === "sessions" && second && third === "changes" && parts.length === 3) {
    const turn = Number(new URLSearchParams(search).get("turn"));
    return { view: "changes", id: second, turn: Number.isInteger(turn) && turn > 0 ? turn : null };
  }
  if (first === "machines" && parts.length === 1) return { view: "machines" };
  if (first === "machines" && second && parts.length <= 3) {
    const tab = MACHINE_TABS.find((t) => t === (third ?? "agents"));
    if (tab) return { view: "machine", machine: second, tab, query: new URLSearchParams(search) };
  }
  if (first === "tasks" && parts.length === 1) return { view: "tasks" };
  if (first === "team" && parts.length === 1) return { view: "team", tab: "policy" };
  const teamTab = TEAM_TABS.find((t) => t === second);
  if (first === "team" && parts.length === 2 && teamTab) return { view: "team", tab: teamTab };
  if (first === "admin" && parts.length === 1) return { view: "admin" };
  return { view: "missing", path: pathname };
}

/** The address of a view. */
export function href(route: Exclude<Route, { view: "missing" }>): string {
  switch (route.view) {
    case "sessions":
      return "/sessions";
    case "session":
      return `/sessions/${encodeURIComponent(route.id)}`;
    case "changes":
      return `/sessions/${encodeURIComponent(route.id)}/changes${route.turn ? `?turn=${route.turn}` : ""}`;
    case "machines":
      return "/machines";
    case "machine": {
      const query = route.query.toString();
      return `/machines/${encodeURIComponent(route.machine)}/${route.tab}${query ? `?${query}` : ""}`;
    }
    case "tasks":
      return "/tasks";
    case "team":
      return route.tab === "policy" ? "/team" : `/team/${route.tab}`;
    case "admin":
      return "/admin";
  }
}

/** A machine's tab, with an optional query (`?path=` for files, `?process=` for the terminal). */
export const machineHref = (machine: string, tab: MachineTab, query: Record<string, string> = {}): string =>
  href({ view: "machine", machine, tab, query: new URLSearchParams(query) });

const listeners = new Set<() => void>();

/** Go to a view without reloading the page (`replace`: without a new history entry). */
export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  for (const listener of listeners) listener();
}

const current = (): Route => parseRoute(location.pathname, location.search, location.hash);

/** The view the address shows now, following links, back and forward. */
export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return route;
}

/** A same-page link: a plain click navigates in place, a modified one (new tab, …) is the browser's. */
export function follow(event: TargetedMouseEvent<HTMLAnchorElement>): void {
  const anchor = event.currentTarget;
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || anchor.target) return;
  event.preventDefault();
  navigate(anchor.getAttribute("href")!);
}
