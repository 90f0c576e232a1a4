/**
 * A machine's agents and the ACP registry's others: installed or not, the version the registry offers,
 * search, install and upgrade; start a session with one.
 */
import { useState } from "preact/hooks";
import type { AgentInfo } from "@agent-runtime/protocol/agents";
import type { Machine } from "@agent-runtime/protocol/machines";
import { errorText, must, typedMachine } from "../api";
import { useCan, usePoll } from "../session-context";
import { Note, Table } from "./parts";
import { NewSession } from "./sessions";

/** Whether an agent matches what was typed in the search box. */
const matches = (a: AgentInfo, search: string) =>
  !search.trim() || [a.id, a.name ?? "", a.description ?? ""].some((text) => text.toLowerCase().includes(search.trim().toLowerCase()));

export function AgentsTab(props: { machine: string; machines: Machine[] }) {
  const [agents, setAgents] = useState<AgentInfo[] | null>(null);
  const [source, setSource] = useState("");
  const [search, setSearch] = useState("");
  const [note, setNote] = useState("");
  const [installing, setInstalling] = useState<string | null>(null);
  const canAct = useCan("member");
  const load = async () => {
    try {
      const list = await must(typedMachine(props.machine).GET("/v1/agents", { params: { query: { config: "true" } } }));
      setAgents(list.agents);
      const r = list.registry;
      setSource(
        r
          ? r.source === "builtin"
            ? `the registry (${r.url}) was never reached: the built-in catalog`
            : `registry: ${r.url}${r.source === "stale" ? ` (unreachable, as last read: ${r.error})` : ""}`
          : "",
      );
    } catch (err) {
      setNote(errorText(err));
    }
  };
  usePoll(load, [props.machine], 60_000);
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
            { label: "credentials", cell: (a) => (a.credentialsAvailable ? "yes" : "no") },
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
        <p class="muted">{source}</p>
        <Note id="agents-note" text={note} />
      </section>
      {canAct ? <NewSession machines={props.machines} machine={props.machine} key={agents?.filter((a) => a.installed).length} /> : null}
    </>
  );
}
