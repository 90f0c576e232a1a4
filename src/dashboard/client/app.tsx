/**
 * The dashboard (docs/architecture.md, "The dashboard"): the signed-in shell, its navigation, and the
 * view the address names. The sessions and machines lists live here, refreshed while the page is looked
 * at, so the tab's title counts the waiting sessions whatever view is open.
 */
import { useCallback, useEffect, useState } from "preact/hooks";
import type { Machine } from "@agent-runtime/protocol/machines";
import type { Whoami } from "@agent-runtime/protocol/trust";
import type { Session } from "@agent-runtime/protocol/sessions";
import { must, typed, whenSignedOut } from "./api";
import { href, navigate, type Route, useRoute } from "./router";
import { LiveBus, LiveEvents, useLiveChanges } from "./live-changes";
import { Me, usePoll } from "./session-context";
import { pageTitle, sessionOrder } from "./transcript";
import { AdminView } from "./views/admin";
import { MachinesView, MachineView } from "./views/machines";
import { Link } from "./views/parts";
import { SessionView } from "./views/session";
import { lazyView } from "./lazy";
import { whoText } from "./format";

/** A session's Changes (the diff renderer) loads when it is opened. */
const ChangesView = lazyView(() => import("./views/changes").then((m) => m.ChangesView));
const TasksView = lazyView(() => import("./views/tasks").then((m) => m.TasksView));
import { SessionsView } from "./views/sessions";
import { SignIn } from "./views/signin";
import { TeamView } from "./views/team";

type SignedIn = { state: "checking" } | { state: "out"; message: string } | { state: "in"; me: Whoami };

export function App() {
  const [signedIn, setSignedIn] = useState<SignedIn>({ state: "checking" });
  const check = useCallback(() => {
    must(typed.GET("/v1/whoami")).then(
      (me) => setSignedIn({ state: "in", me }),
      () => setSignedIn((s) => (s.state === "out" ? s : { state: "out", message: "" })),
    );
  }, []);
  useEffect(() => {
    // "Ended" only for someone who was signed in: a first visit just gets the form.
    whenSignedOut(() => setSignedIn((s) => ({ state: "out", message: s.state === "in" ? "The sign-in ended: sign in again." : "" })));
    // A sign-in cookie from an earlier visit (another tab, yesterday) is enough: ask who we are.
    check();
  }, [check]);
  if (signedIn.state === "checking") return <p class="muted pad">Loading…</p>;
  if (signedIn.state === "out") return <SignIn message={signedIn.message} onSignedIn={check} />;
  return (
    <Me.Provider value={signedIn.me}>
      <Shell me={signedIn.me} onSignOut={() => setSignedIn({ state: "out", message: "" })} />
    </Me.Provider>
  );
}

/** The navigation's links: each one is the selected link while the route shows one of the views it matches. */
const NAV: readonly { view: "sessions" | "machines" | "tasks" | "team" | "admin"; label: string; match: readonly Route["view"][] }[] = [
  { view: "sessions", label: "Sessions", match: ["sessions", "session", "changes"] },
  { view: "machines", label: "Machines", match: ["machines", "machine"] },
  { view: "tasks", label: "Tasks", match: ["tasks"] },
  { view: "team", label: "Team", match: ["team"] },
  { view: "admin", label: "Admin", match: ["admin"] },
];

function Shell(props: { me: Whoami; onSignOut: () => void }) {
  const route = useRoute();
  const [sessions, setSessions] = useState<Session[] | null>(null);
  const [offline, setOffline] = useState(false);
  const [machines, setMachines] = useState<Machine[] | null>(null);
  const loadSessions = useCallback(async () => {
    // Without a network the service worker answers with the last list it saw: shown, and said so.
    setOffline(!navigator.onLine);
    const list = await must(typed.GET("/v1/sessions", { params: { query: { limit: 100 } } })).catch(() => null);
    if (list) setSessions([...list.sessions].sort(sessionOrder));
  }, []);
  const loadMachines = useCallback(async () => {
    const list = await must(typed.GET("/v1/machines")).catch(() => null);
    setMachines(list?.machines ?? []);
  }, []);
  usePoll(() => Promise.all([loadSessions(), loadMachines()]), []);
  // The tab's one live stream: a session's state changing on any machine (a question asked, a turn ended)
  // reads the sessions again now, a machine coming or going the machines too; views hear it through `bus`.
  const [bus] = useState(() => new LiveBus());
  useLiveChanges("/v1/sessions/events", (events) => {
    if (events.some((e) => e.event === "session" || e.event === "machine")) void loadSessions();
    if (events.some((e) => e.event === "machine")) void loadMachines();
    bus.publish(events);
  });
  // A push this device received (a question, a turn's end) changes the list now, not at the next poll.
  useEffect(() => {
    const worker = navigator.serviceWorker;
    if (!worker) return;
    const pushed = (event: MessageEvent) => {
      if (event.data?.type === "pushed") void loadSessions();
    };
    worker.addEventListener("message", pushed);
    return () => worker.removeEventListener("message", pushed);
  }, [loadSessions]);
  useEffect(() => {
    document.title = sessions ? pageTitle(sessions) : "agent-runtime";
  }, [sessions]);
  // The legacy `/#session=<id>` link gets the session's own address.
  useEffect(() => {
    if (route.view === "session" && location.hash.startsWith("#session=")) navigate(href(route), true);
  }, [route]);

  const signOut = async () => {
    await fetch("/v1/signin", { method: "DELETE", headers: { "x-agent-runtime-csrf": "1" }, credentials: "same-origin" }).catch(() => {});
    // What the service worker kept for offline use goes too.
    navigator.serviceWorker?.controller?.postMessage("signed-out");
    props.onSignOut();
  };
  const isAdmin = props.me.role === "admin";
  const waiting = sessions?.filter((s) => s.state === "waiting").length ?? 0;
  return (
    <>
      <header>
        <h1>
          <Link href="/sessions">agent-runtime</Link>
        </h1>
        <nav class="main" aria-label="views">
          {NAV.filter((n) => n.view !== "admin" || isAdmin).map((n) => (
            <Link
              key={n.view}
              href={`/${n.view}`}
              data-view={n.view}
              class={n.match.includes(route.view) ? "selected" : ""}
              aria-current={n.match.includes(route.view) ? "page" : undefined}
            >
              {n.label}
              {n.view === "sessions" && waiting ? <span class="count">{waiting}</span> : null}
            </Link>
          ))}
        </nav>
        <span id="whoami" class="muted" title={`${whoText(props.me.name)} (${props.me.role})`}>
          {whoText(props.me.name)} ({props.me.role})
        </span>
        <button id="logout" type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="app">
        <LiveEvents.Provider value={bus}>
          <View
            route={route}
            sessions={sessions}
            offline={offline}
            machines={machines}
            reloadSessions={loadSessions}
            reloadMachines={loadMachines}
            isAdmin={isAdmin}
          />
        </LiveEvents.Provider>
      </main>
    </>
  );
}

function View(props: {
  route: Route;
  sessions: Session[] | null;
  offline: boolean;
  machines: Machine[] | null;
  reloadSessions: () => Promise<void>;
  reloadMachines: () => Promise<void>;
  isAdmin: boolean;
}) {
  const { route } = props;
  switch (route.view) {
    case "sessions":
      return <SessionsView sessions={props.sessions} offline={props.offline} machines={props.machines ?? []} reload={props.reloadSessions} />;
    case "session":
      return <SessionView id={route.id} onChange={props.reloadSessions} />;
    case "changes":
      return <ChangesView id={route.id} turn={route.turn} />;
    case "machines":
      return <MachinesView machines={props.machines} />;
    case "machine":
      return <MachineView machine={route.machine} tab={route.tab} query={route.query} machines={props.machines} sessions={props.sessions ?? []} />;
    case "tasks":
      return <TasksView machines={props.machines} sessions={props.sessions ?? []} />;
    case "team":
      return <TeamView tab={route.tab} />;
    case "admin":
      return props.isAdmin ? (
        <AdminView focusConnect={new URLSearchParams(location.search).has("connect")} onMachinesChange={props.reloadMachines} />
      ) : (
        <p class="muted">Only an admin manages the team.</p>
      );
    case "missing":
      return (
        <p class="muted">
          Nothing here ({route.path}). <Link href="/sessions">Sessions</Link>
        </p>
      );
  }
}
