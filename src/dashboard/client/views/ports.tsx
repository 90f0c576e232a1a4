/**
 * A machine's Ports: what listens on it, whether its owner exposed it (`--expose-ports`), and Open, which
 * asks for a preview link (POST /v1/ports/{port}/preview) and opens the app in a new tab. Also the line a
 * session view shows when the agent's own app listens.
 */
import { useState } from "preact/hooks";
import type { ListeningPort, PortList } from "@agent-runtime/protocol/preview";
import { errorText, machineApi, must, typedMachine } from "../api";
import { useCan } from "../session-context";
import type { Session } from "@agent-runtime/protocol/sessions";
import { href, machineHref } from "../router";
import { Link, Note, Table } from "./parts";
import { useResource } from "../use-resource";

/** The live stream's changes after which a machine's ports are read again. */
const PORT_EVENTS = ["ports", "machine"] as const;

/** A machine's listening ports, read again when the live stream says they (or the machine) changed, or the page sees it come or go. */
const usePorts = (machine: string, connected: boolean | null) =>
  useResource(`${machineApi(machine)}/ports`, {
    read: () => must(typedMachine(machine).GET("/v1/ports")),
    follow: { machine, kinds: PORT_EVENTS },
    again: [connected],
  });

/**
 * Open a preview in a new tab. The tab is opened at once (a phone's browser allows a new tab only in the
 * tap itself), told nothing of this page (no opener), and sent to the link once the API answers.
 */
export async function openPreview(machine: string, port: number): Promise<void> {
  const tab = window.open("about:blank", "_blank");
  if (tab) tab.opener = null;
  try {
    const { url } = await must(typedMachine(machine).POST("/v1/ports/{port}/preview", { params: { path: { port } } }));
    if (tab) tab.location.href = url;
    else window.location.href = url;
  } catch (err) {
    tab?.close();
    throw err;
  }
}

/** The program listening, by name (its whole command line is a click away in Processes). */
function programText(port: ListeningPort): string {
  const program = port.command?.split(" ")[0]?.split("/").pop();
  return program || "another user's process";
}

/** Who started what listens, in words, with a link to its session when an agent's app listens. */
function Owner(props: { port: ListeningPort; machine: string; sessions: Session[] }) {
  const owner = props.port.owner;
  if (!owner) return <>{programText(props.port)}</>;
  if (owner.kind === "sidecar") return <>agent-runtime itself</>;
  if (owner.kind === "process")
    return (
      <>
        {programText(props.port)} · <Link href={machineHref(props.machine, "processes")}>a process started here</Link>
      </>
    );
  const session = props.sessions.find((s) => s.machine === props.machine && s.serverId === owner.serverId);
  return (
    <>
      {programText(props.port)} ·{" "}
      {session ? <Link href={href({ view: "session", id: session.id })}>{session.title || "an agent's session"}</Link> : "an agent's app"}
    </>
  );
}

/** `connected`: the machine's presence as the page's header shows it; a change reads the ports again. */
export function PortsTab(props: { machine: string; connected: boolean | null; sessions: Session[] }) {
  const canOpen = useCan("member");
  // What listens changed, or the machine came or went: read now, not at the next poll.
  const ports = usePorts(props.machine, props.connected);
  const list: PortList | null = ports.data;
  const [note, setNote] = useState("");
  const open = (port: number) => openPreview(props.machine, port).catch((err) => setNote(errorText(err)));
  return (
    <section id="ports-tab">
      <p class="muted" id="ports-exposed">
        {list
          ? list.expose
            ? `The machine's owner exposed ${list.expose}: those ports open here, nothing else.`
            : "The machine's owner exposed no port. To open one here, restart its sidecar with --expose-ports (e.g. --expose-ports 5173)."
          : "Reading the machine's ports…"}
      </p>
      <Table
        id="ports-list"
        rows={list?.ports ?? []}
        rowProps={(p) => ({ "data-port": String(p.port) })}
        empty="Nothing listens on this machine."
        columns={[
          { label: "Port", cell: (p) => <strong>:{p.port}</strong> },
          { label: "What", cell: (p) => <Owner port={p} machine={props.machine} sessions={props.sessions} /> },
          { label: "Listens on", cell: (p) => p.addresses.join(", ") },
          {
            label: "Preview",
            cell: (p) =>
              !p.allowed ? (
                <span class="muted">not exposed</span>
              ) : canOpen ? (
                <button type="button" class="primary" data-open={p.port} onClick={() => void open(p.port)}>
                  Open
                </button>
              ) : (
                <span class="muted">exposed (members open it)</span>
              ),
          },
        ]}
      />
      <Note id="ports-note" text={note || ports.error} error />
    </section>
  );
}

/** "The agent's app is listening on :5173 — Open", while a process of this session's agent listens on an exposed port. */
export function SessionPorts(props: { machine: string; serverId: string; state: string }) {
  const canOpen = useCan("member");
  // Its machine coming back is heard on the live stream (`machine`): no presence of a header to follow here.
  const read = usePorts(props.machine, null);
  const [note, setNote] = useState("");
  // What cannot be read is not offered (an old list could name an app that has gone).
  const ports = read.error ? [] : (read.data?.ports ?? []).filter((p) => p.owner?.kind === "acp" && p.owner.serverId === props.serverId);
  // An app on a machine that is away cannot be opened: the line goes with the machine, and comes back with it.
  if (!canOpen || ports.length === 0 || props.state === "offline") return null;
  return (
    <div id="session-ports">
      {ports.map((p) => (
        <p class="row" key={p.port}>
          <span class="grow">The agent's app is listening on :{p.port}</span>
          {p.allowed ? (
            <button
              type="button"
              class="primary"
              data-open={p.port}
              onClick={() => void openPreview(props.machine, p.port).catch((err) => setNote(errorText(err)))}
            >
              Open
            </button>
          ) : (
            <span class="muted">not exposed (--expose-ports {p.port})</span>
          )}
        </p>
      ))}
      <Note id="session-ports-note" text={note} error />
    </div>
  );
}
