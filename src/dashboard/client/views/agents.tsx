/**
 * A machine's agents and the ACP registry's others: installed or not, the version the registry offers,
 * search, install and upgrade; start a session with one.
 */
import { useState } from "preact/hooks";
import type { AgentInfo } from "@agent-runtime/protocol/agents";
import type { Machine } from "@agent-runtime/protocol/machines";
import { errorText, machineApi, must, typedMachine } from "../api";
import { useCan } from "../session-context";
import { useResource } from "../use-resource";
import { AgentLogin } from "./agent-login";
import { Note, Table } from "./parts";
import { NewSession } from "./sessions";

/** Whether the agent is logged in on the machine, as it said when asked (docs/agents.md, "Logging agents in"). */
function loginText(a: AgentInfo): string {
  if (!a.installed || !a.login) return "—";
  const state = { logged_in: "yes", needs_login: "needs login", unknown: a.credentialsAvailable ? "not asked yet (a key is set)" : "not asked yet" }[
    a.login.state
  ];
  return a.login.pending ? `${state} · a page to open` : state;
}

/** Whether an agent matches what was typed in the search box. */
const matches = (a: AgentInfo, search: string) =>
  !search.trim() || [a.id, a.name ?? "", a.description ?? ""].some((text) => text.toLowerCase().includes(search.trim().toLowerCase()));

/** `connected`: the machine's presence as the page's header shows it (null: not known yet); a change reads the agents again. */
export function AgentsTab(props: { machine: string; connected: boolean | null; machines: Machine[] }) {
  const listed = useResource(`${machineApi(props.machine)}/agents`, {
    read: () => must(typedMachine(props.machine).GET("/v1/agents", { params: { query: { config: "true" } } })),
    everyMs: 60_000,
    again: [props.connected],
  });
  const agents: AgentInfo[] | null = listed.data?.agents ?? null;
  const registry = listed.data?.registry;
  const source = registry
    ? registry.source === "builtin"
      ? `the registry (${registry.url}) was never reached: the built-in catalog`
      : `registry: ${registry.url}${registry.source === "stale" ? ` (unreachable, as last read: ${registry.error})` : ""}`
    : "";
  const load = listed.refetch;
  const [search, setSearch] = useState("");
  const [note, setNote] = useState("");
  const [installing, setInstalling] = useState<string | null>(null);
  /** The agent whose ways to log in are open below the list. */
  const [loggingIn, setLoggingIn] = useState<string | null>(null);
  const canAct = useCan("member");
  /** Ask the agent itself (it is started once for it), then show what it said. */
  const checkLogin = async (id: string) => {
    setNote(`asking ${id} whether it is logged in…`);
    try {
      const login = await must(typedMachine(props.machine).GET("/v1/agents/{agent}/login", { params: { path: { agent: id }, query: {} } }));
      setNote(`${id}: ${{ logged_in: "logged in", needs_login: "needs a login", unknown: "it did not say" }[login.state]}`);
    } catch (err) {
      setNote(`${id}: ${errorText(err)}`);
    }
    await load();
  };
  const install = async (id: string) => {
    setInstalling(id);
    setNote(`installing ${id} (progress: the npm processes in Processes)…`);
    try {
      const result = await must(typedMachine(props.machine).POST("/v1/agents/{agent}/install", { params: { path: { agent: id } }, body: {} }));
      setNote(`${id}: ${result.already_installed ? "already installed" : "installed"} (${result.artifacts.map((x) => `${x.kind} ${x.version}`).join(", ")})`);
    } catch (err) {
      setNote(`${id}: ${errorText(err)}`);
    }
    setInstalling(null);
    await load();
  };
  return (
    <>
      <section>
        <h2>
          Agents <span class="muted">{agents ? "" : "· asking the machine…"}</span>
        </h2>
        <input
          id="agents-search"
          type="search"
          class="wide"
          placeholder="search agents (name, id, description)"
          aria-label="search agents"
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
        <Table
          id="agents"
          rows={(agents ?? []).filter((a) => matches(a, search))}
          rowProps={(a) => ({ "data-agent": a.id })}
          columns={[
            { label: "agent", cell: (a) => (a.name && a.name !== a.id ? `${a.name} (${a.id})` : a.id) },
            { label: "installed", class: "installed", cell: (a) => (a.installed ? `yes${a.installedVersion ? ` ${a.installedVersion}` : ""}` : "no") },
            {
              label: "registry",
              class: "registry",
              cell: (a) =>
                a.registry
                  ? `${a.registry.version}${a.updateAvailable ? " (update available)" : ""}${a.registry.installable ? "" : ` · ${a.registry.reason}`}`
                  : "—",
            },
            {
              label: "logged in",
              class: "login",
              cell: (a) =>
                !canAct || !a.installed ? (
                  loginText(a)
                ) : a.login?.state === "needs_login" || a.login?.pending ? (
                  <button type="button" data-login={a.id} onClick={() => setLoggingIn(a.id)}>
                    Log in ({loginText(a)})
                  </button>
                ) : a.login?.state === "unknown" ? (
                  <button type="button" data-check-login={a.id} onClick={() => void checkLogin(a.id)}>
                    Ask whether it is logged in
                  </button>
                ) : (
                  loginText(a)
                ),
            },
            {
              label: "",
              cell: (a) =>
                canAct && (a.installed || a.registry?.installable !== false) ? (
                  <button type="button" data-install={a.id} disabled={installing !== null} onClick={() => install(a.id)}>
                    {installing === a.id ? "Installing…" : a.updateAvailable ? "Upgrade" : a.installed ? "Reinstall" : "Install"}
                  </button>
                ) : null,
            },
          ]}
        />
        {(() => {
          const agent = loggingIn ? agents?.find((a) => a.id === loggingIn) : undefined;
          if (!agent?.login) return null;
          const done = agent.login.state === "logged_in" && !agent.login.pending;
          return (
            <div id="agent-login-panel">
              {done ? (
                <p id="agent-logged-in">
                  {agent.id} is logged in on {props.machine}.
                </p>
              ) : (
                <AgentLogin
                  id="agent-login"
                  key={agent.id}
                  agent={agent.id}
                  machine={props.machine}
                  methods={agent.login.methods}
                  intro={`${agent.id} is not logged in on ${props.machine}: log it in one of its ways.`}
                  onError={setNote}
                  onChanged={() => void load()}
                />
              )}
              <button type="button" onClick={() => setLoggingIn(null)}>
                Close
              </button>
            </div>
          );
        })()}
        <p class="muted">{source}</p>
        <Note id="agents-note" text={note || listed.error} />
      </section>
      {canAct ? <NewSession machines={props.machines} machine={props.machine} installed={agents?.filter((a) => a.installed).map((a) => a.id)} /> : null}
    </>
  );
}
