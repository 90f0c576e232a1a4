/** A machine's processes: start one (a command or a shell line, with or without a terminal), its logs, attach, stop; ACP servers. */
import { useEffect, useState } from "preact/hooks";
import type { AcpServer } from "@agent-runtime/protocol/acp";
import type { Process } from "@agent-runtime/protocol/processes";
import { errorText, machineApi, must, typedMachine } from "../api";
import { machineHref, navigate } from "../router";
import { useCan } from "../session-context";
import { useFollow, useResource } from "../use-resource";
import { unreachableText } from "../machine-reach";
import { spawnRequest } from "../spawn";
import { CheckBox, Link, Note, Table, WideInput } from "./parts";

/** The schemas a log stream is read with; they load with the first logs shown (the first view's script carries no schema library). */
type LogSchemas = typeof import("@agent-runtime/protocol/processes");

/** `connected`: the machine's presence as the page's header shows it (null: not known yet); a change reads the list again. */
export function ProcessesTab(props: { machine: string; connected: boolean | null }) {
  const v1 = machineApi(props.machine);
  const canAct = useCan("member");
  // `asked`: each tap on Logs follows them from the start again, the same process's too.
  const [logs, setLogs] = useState<{ id: string; text: string; asked: number } | null>(null);
  const [note, setNote] = useState("");
  const [command, setCommand] = useState("");
  const [cwd, setCwd] = useState("");
  const [tty, setTty] = useState(false);
  const listed = useResource(`${v1}/processes`, {
    read: async () => {
      const machine = typedMachine(props.machine);
      const [p, s] = await Promise.all([must(machine.GET("/v1/processes")), must(machine.GET("/v1/acp"))]);
      return { processes: p.processes.slice(-50).reverse(), servers: s.servers };
    },
    again: [props.connected],
  });
  const processes: Process[] = listed.data?.processes ?? [];
  const servers: AcpServer[] = listed.data?.servers ?? [];
  const load = listed.refetch;
  /** A button's call on a row: the lists read again after it, or what went wrong in the note. */
  const act = (work: Promise<unknown>) => work.then(load, (err) => setNote(errorText(err)));
  // The machine away (or its list unreadable): the rows are as last read, and nothing is offered on them.
  const unreachable = unreachableText(listed.error, props.connected, props.machine, listed.data !== null);
  const canTouch = canAct && !unreachable;
  // What was said about the machine before it came or went no longer holds.
  useEffect(() => setNote(""), [props.connected]);

  const [schemas, setSchemas] = useState<LogSchemas | null>(null);
  useEffect(() => {
    if (!logs || schemas) return;
    import("@agent-runtime/protocol/processes").then(setSchemas, (err) => setNote(`could not load the logs' reader: ${errorText(err)}`));
  }, [logs, schemas]);

  // The logs of the process chosen, followed while they are shown (closing them ends the stream).
  useFollow(
    logs && schemas ? `${v1}/processes/${encodeURIComponent(logs.id)}/logs?follow=true` : null,
    (event, data) => {
      let more = "";
      if (!schemas) return;
      const entry = event === "log" ? schemas.LogEntry.safeParse(data) : null;
      if (entry?.success) more = entry.data.encoding === "base64" ? atob(entry.data.data) : entry.data.data;
      if (event === "end") {
        const end = schemas.ProcessLogEnd.safeParse(data);
        more = `\n[${!end.success ? "ended" : "reason" in end.data ? "its logs are gone" : `exited: ${end.data.exitCode ?? end.data.signal}`}]`;
        void load();
      }
      setLogs((shown) => (shown ? { ...shown, text: shown.text + more } : shown));
    },
    { again: logs?.asked },
  );
  const followLogs = (id: string) => setLogs((shown) => ({ id, text: "", asked: (shown?.asked ?? 0) + 1 }));

  const start = async (e: Event) => {
    e.preventDefault();
    // The box's own `required` stops an empty one; spaces alone get here, and are said, not ignored.
    if (!command.trim()) return setNote("Type a command to start (e.g. npm test).");
    try {
      const started = await must(typedMachine(props.machine).POST("/v1/processes", { body: spawnRequest(command, cwd, tty) }));
      setNote(`started ${started.id}`);
      // Emptied for the next one, unless the person already typed it while this one started.
      setCommand((now) => (now === command ? "" : now));
      if (tty) navigate(machineHref(props.machine, "terminal", { process: started.id }));
      else {
        followLogs(started.id);
        await load();
      }
    } catch (err) {
      setNote(errorText(err));
    }
  };

  return (
    <>
      <section>
        <div class="row">
          <h2 class="grow">Processes</h2>
          <button id="refresh" type="button" onClick={() => void load()}>
            Refresh
          </button>
        </div>
        {canAct ? (
          <form id="proc-form" class="row" onSubmit={start}>
            <WideInput id="proc-command" placeholder="a command, e.g. npm test" required value={command} onValue={setCommand} />
            <WideInput id="proc-cwd" placeholder="folder (empty: the machine's default)" value={cwd} onValue={setCwd} />
            <CheckBox id="proc-tty" checked={tty} onValue={setTty}>
              terminal
            </CheckBox>
            <button type="submit" class="primary">
              Start
            </button>
          </form>
        ) : null}
        <Note id="proc-msg" text={unreachable || note} />
        <Table
          id="processes"
          rows={processes}
          columns={[
            { label: "id", cell: (p) => p.id },
            { label: "command", cell: (p) => `${[p.command, ...p.args].join(" ").slice(0, 80)}${p.label ? `  (${p.label})` : ""}` },
            { label: "owner", cell: (p) => p.owner },
            { label: "status", cell: (p) => (p.status === "exited" ? `exited ${p.exitCode ?? p.signal ?? ""}` : p.status) },
            {
              label: "",
              cell: (p) => (
                <div class="row">
                  <button type="button" onClick={() => followLogs(p.id)}>
                    Logs
                  </button>
                  {p.tty && p.status === "running" && canTouch ? (
                    <Link class="button" href={machineHref(props.machine, "terminal", { process: p.id })} data-attach={p.id}>
                      Attach
                    </Link>
                  ) : null}
                  {p.status === "running" && canTouch && p.owner === "user" ? (
                    <button
                      type="button"
                      data-kill={p.id}
                      onClick={() => act(must(typedMachine(props.machine).POST("/v1/processes/{id}/stop", { params: { path: { id: p.id } } })))}
                    >
                      Stop
                    </button>
                  ) : null}
                </div>
              ),
            },
          ]}
        />
        {logs ? (
          <div id="logs-box">
            <div class="row">
              <b class="grow">logs of {logs.id}</b>
              <button id="logs-close" type="button" onClick={() => setLogs(null)}>
                Close
              </button>
            </div>
            <pre id="logs">{logs.text}</pre>
          </div>
        ) : null}
      </section>
      <section>
        <h2>ACP servers</h2>
        <Table
          id="servers"
          rows={servers}
          empty="none"
          columns={[
            { label: "server", cell: (s) => s.serverId },
            { label: "agent", cell: (s) => s.agent },
            { label: "since", cell: (s) => new Date(s.createdAtMs).toLocaleTimeString() },
            {
              label: "",
              cell: (s) =>
                canTouch ? (
                  <button
                    type="button"
                    onClick={() => act(must(typedMachine(props.machine).DELETE("/v1/acp/{server_id}", { params: { path: { server_id: s.serverId } } })))}
                  >
                    Stop
                  </button>
                ) : null,
            },
          ]}
        />
      </section>
    </>
  );
}
