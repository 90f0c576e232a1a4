/**
 * A machine's terminal: a login shell of its own, or a tty process attached by its address
 * (`?process=`), so a reload or a second device attaches to the same one. The row of keys a phone lacks
 * sits under it; a dropped socket reconnects by itself (terminal.ts).
 */
import { useRef } from "preact/hooks";
import { byId, errorText, machineApi, must, typedMachine } from "../api";
import { machineHref, navigate } from "../router";
import { useTerminal } from "../terminal";

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

/** `connected`: the machine's presence as the page's header shows it; its coming back redials a dropped terminal at once. */
export function TerminalTab(props: { machine: string; connected: boolean | null; processId: string | null }) {
  const box = useRef<HTMLDivElement>(null);
  const terminal = useTerminal(box, machineApi(props.machine), props.processId, props.connected, {
    idle: "a login shell on the machine, or attach to a tty process from Processes",
    onExit: () => navigate(machineHref(props.machine, "terminal"), true),
  });

  const openShell = async () => {
    try {
      const shell = await must(typedMachine(props.machine).POST("/v1/processes", { body: LOGIN_SHELL }));
      navigate(machineHref(props.machine, "terminal", { process: shell.id }), true);
    } catch (err) {
      terminal.say(errorText(err));
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
                terminal.say("detached: the shell runs on (attach it again from Processes)");
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
                await must(typedMachine(props.machine).POST("/v1/processes/{id}/kill", byId(id))).catch((err) => terminal.say(errorText(err)));
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
          {terminal.status}
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
              onClick={() => (k.data === null ? terminal.handle.current?.armCtrl() : terminal.handle.current?.input(k.data))}
            >
              {k.label}
            </button>
          ))}
        </div>
      ) : null}
    </section>
  );
}
