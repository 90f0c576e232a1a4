/**
 * A machine's terminal: a login shell of its own, or a tty process attached by its address
 * (`?process=`), so a reload or a second device attaches to the same one. The row of keys a phone lacks
 * sits under it; a dropped socket reconnects by itself (terminal.ts).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { byId, errorText, machineApi, must, typed, typedMachine } from "../api";
import { machineHref, navigate } from "../router";
import { openTerminal, type TerminalHandle } from "../terminal";

/** The keys a phone's keyboard lacks, as a terminal sends them (Ctrl arms the next key). */
const KEYS = [
  { key: "esc", label: "Esc", data: "\x1b" },
  { key: "tab", label: "Tab", data: "\t" },
  { key: "ctrl", label: "Ctrl", data: null },
  { key: "left", label: "←", data: "\x1b[D" },
  { key: "up", label: "↑", data: "\x1b[A" },
  { key: "down", label: "↓", data: "\x1b[B" },
  { key: "right", label: "→", data: "\x1b[C" },
] as const;

/** A login shell: the person's own ($SHELL), else bash, else sh (dash keeps no history). */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, for the shell on the machine
const LOGIN_SHELL = { command: "sh", args: ["-c", 'exec "${SHELL:-$(command -v bash || echo sh)}" -l'], tty: true, interactive: true };

export function TerminalTab(props: { machine: string; processId: string | null }) {
  const v1 = machineApi(props.machine);
  const box = useRef<HTMLDivElement>(null);
  const handle = useRef<TerminalHandle | null>(null);
  const [status, setStatus] = useState("a login shell on the machine, or attach to a tty process from Processes");

  useEffect(() => {
    const id = props.processId;
    if (!id || !box.current) return;
    // A browser cannot put a header on a WebSocket: every dial (a reconnect too) asks for a one-minute ticket.
    const url = async () => {
      const { ticket } = await must(typed.POST("/v1/tickets"));
      return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${v1}/processes/${encodeURIComponent(id)}/terminal/ws?access_token=${encodeURIComponent(ticket)}`;
    };
    box.current.scrollIntoView({ block: "nearest" }); // xterm.js draws only while the terminal is on screen
    const opened = openTerminal(box.current, url, {
      onStatus: setStatus,
      onExit: (code) => {
        setStatus(`the shell exited (${code})`);
        navigate(machineHref(props.machine, "terminal"), true);
      },
    });
    handle.current = opened;
    return () => {
      opened.close();
      handle.current = null;
    };
  }, [props.machine, props.processId, v1]);

  const openShell = async () => {
    try {
      const shell = await must(typedMachine(props.machine).POST("/v1/processes", { body: LOGIN_SHELL }));
      navigate(machineHref(props.machine, "terminal", { process: shell.id }), true);
    } catch (err) {
      setStatus(errorText(err));
    }
  };
  const attached = props.processId !== null;
  return (
    <section id="terminal-view">
      <div class="row">
        {attached ? (
          <>
            <button
              id="term-detach"
              type="button"
              onClick={() => {
                navigate(machineHref(props.machine, "terminal"));
                setStatus("detached: the shell runs on (attach it again from Processes)");
              }}
            >
              Detach
            </button>
            <button
              id="term-end"
              type="button"
              onClick={async () => {
                const id = props.processId!;
                navigate(machineHref(props.machine, "terminal"), true);
                await must(typedMachine(props.machine).POST("/v1/processes/{id}/kill", byId(id))).catch((err) => setStatus(errorText(err)));
              }}
            >
              End the shell
            </button>
          </>
        ) : (
          <button id="term-open" type="button" class="primary" onClick={openShell}>
            Open a shell
          </button>
        )}
        <span id="term-state" class="muted grow">
          {status}
        </span>
      </div>
      {/* keyed by process: a new attachment gets a fresh box for xterm.js */}
      {attached ? <div id="terminal" ref={box} key={props.processId} /> : null}
      {attached ? (
        <div id="term-keys" class="row">
          {KEYS.map((k) => (
            <button
              key={k.key}
              type="button"
              data-key={k.key}
              aria-label={k.key}
              onClick={() => (k.data === null ? handle.current?.armCtrl() : handle.current?.input(k.data))}
            >
              {k.label}
            </button>
          ))}
        </div>
      ) : null}
    </section>
  );
}
