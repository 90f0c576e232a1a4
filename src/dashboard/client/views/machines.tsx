/** The machines of the team, and one machine's tabs: agents, processes, files, terminal, ports. */
import type { ComponentChildren } from "preact";
import type { Machine } from "@agent-runtime/protocol/machines";
import type { Session } from "@agent-runtime/protocol/sessions";
import { href, MACHINE_TABS, type MachineTab, machineHref } from "../router";
import { useCan } from "../session-context";
import { AgentsTab } from "./agents";
import { FilesTab } from "./files";
import { Dot, Link, Tabs } from "./parts";
import { ProcessesTab } from "./processes";
import { PortsTab } from "./ports";
import { lazyView } from "../lazy";

/** The terminal (xterm.js) loads when the tab is opened. */
const TerminalTab = lazyView(() => import("./terminal").then((m) => m.TerminalTab));

export function MachinesView(props: { machines: Machine[] | null }) {
  const isAdmin = useCan("admin");
  return (
    <section id="machines-view">
      <div class="row">
        <h2 class="grow">Machines</h2>
        {isAdmin ? (
          <Link id="connect-new" class="button" href="/admin?connect=1">
            + Connect a machine
          </Link>
        ) : null}
      </div>
      <div id="machines">
        {props.machines?.map((m) => (
          <Link key={m.id} class="machine" href={machineHref(m.id, "agents")} data-machine={m.id}>
            <Dot on={m.connected} />
            <span class="grow">{m.id}</span>
            <span class="muted">{m.connected ? "connected" : "offline"}</span>
            {m.platform ? <span class="muted">{m.platform}</span> : null}
            {m.sidecarOutdated ? (
              <span class="error" title="its sidecar is older than this worker's: see 'agent-runtime-sidecar status' on it">
                update
              </span>
            ) : null}
          </Link>
        ))}
        {props.machines?.length === 0 ? <p class="muted">No machine has connected yet.</p> : null}
      </div>
    </section>
  );
}

const TAB_NAMES: Record<MachineTab, string> = { agents: "Agents", processes: "Processes", files: "Files", terminal: "Terminal", ports: "Ports" };

export function MachineView(props: { machine: string; tab: MachineTab; query: URLSearchParams; machines: Machine[] | null; sessions: Session[] }) {
  const known = props.machines?.find((m) => m.id === props.machine);
  const canAct = useCan("member");
  // One truth per machine on the page: when the header's presence changes, the tab reads the machine again.
  // Handed down, not a key that re-mounts the tab: a re-mount drops what the person typed in its forms.
  const connected = known ? known.connected : null;
  const tabs = MACHINE_TABS.filter((t) => t !== "terminal" || canAct);
  let body: ComponentChildren;
  switch (props.tab) {
    case "agents":
      body = <AgentsTab machine={props.machine} connected={connected} machines={props.machines ?? []} />;
      break;
    case "processes":
      body = <ProcessesTab machine={props.machine} connected={connected} />;
      break;
    case "files":
      body = <FilesTab machine={props.machine} connected={connected} folder={props.query.get("path") ?? ""} />;
      break;
    case "terminal":
      body = canAct ? <TerminalTab machine={props.machine} processId={props.query.get("process")} /> : null;
      break;
    case "ports":
      body = <PortsTab machine={props.machine} connected={connected} sessions={props.sessions} />;
      break;
  }
  return (
    <div id="machine-view" data-machine-view={props.machine}>
      <div class="row machine-head">
        <Link class="button" href={href({ view: "machines" })} aria-label="all machines">
          ←
        </Link>
        <h2 class="grow">
          {known ? <Dot on={known.connected} /> : null} {props.machine}
        </h2>
        <span class="muted">{known ? (known.connected ? `connected · sidecar ${known.sidecarVersion ?? "?"}` : "offline") : ""}</span>
      </div>
      <Tabs label={`${props.machine}'s views`} tabs={tabs} current={props.tab} href={(t) => machineHref(props.machine, t)} names={TAB_NAMES} />
      {body}
    </div>
  );
}
