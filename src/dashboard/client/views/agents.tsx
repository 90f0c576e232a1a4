/** A machine's agents: installed or not, credentials, version; install; start a session with one. */
import { useState } from "preact/hooks";
import type { AgentInfo, InstallResult, Machine } from "../../../protocol/resources";
import { apiJson, errorText, machineApi, send } from "../api";
import { useCan, usePoll } from "../session-context";
import { Note, Table } from "./parts";
import { NewSession } from "./sessions";

export function AgentsTab(props: { machine: string; machines: Machine[] }) {
  const [agents, setAgents] = useState<AgentInfo[] | null>(null);
  const [note, setNote] = useState("");
  const [installing, setInstalling] = useState<string | null>(null);
  const canAct = useCan("member");
  const v1 = machineApi(props.machine);
  const load = async () => {
    try {
      setAgents((await apiJson<{ agents: AgentInfo[] }>(`${v1}/agents?config=true`)).agents);
    } catch (err) {
      setNote(errorText(err));
    }
  };
  usePoll(load, [props.machine], 60_000);
  const install = async (id: string) => {
    setInstalling(id);
    setNote(`installing ${id} (progress: the npm processes in Processes)…`);
    try {
      const result = await send<InstallResult>(`${v1}/agents/${id}/install`, {});
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
        <Table
          id="agents"
          rows={agents ?? []}
          rowProps={(a) => ({ "data-agent": a.id })}
          columns={[
            { label: "agent", cell: (a) => a.id },
            { label: "installed", class: "installed", cell: (a) => (a.installed ? "yes" : "no") },
            { label: "credentials", cell: (a) => (a.credentialsAvailable ? "yes" : "no") },
            { label: "version", cell: (a) => a.version || "—" },
            {
              label: "",
              cell: (a) =>
                canAct ? (
                  <button type="button" data-install={a.id} disabled={installing !== null} onClick={() => install(a.id)}>
                    {installing === a.id ? "Installing…" : a.installed ? "Reinstall" : "Install"}
                  </button>
                ) : null,
            },
          ]}
        />
        <Note id="agents-note" text={note} />
      </section>
      {canAct ? <NewSession machines={props.machines} machine={props.machine} key={agents?.filter((a) => a.installed).length} /> : null}
    </>
  );
}
