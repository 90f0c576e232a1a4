/**
 * The dashboard's terminal (a browser module, bundled with xterm.js by scripts/build.ts and served from
 * the worker: no CDN). It attaches to a tty process's terminal WebSocket and speaks the frames the
 * runtime serves (docs/architecture.md, "Terminals"): output as binary messages, `ready`/`exit`/`error`
 * as JSON text; it sends `input` and `resize`.
 */
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";

export interface TerminalEvents {
  onStatus(text: string): void;
  onExit(exitCode: number | null): void;
}

export interface TerminalHandle {
  close(): void;
}

type ServerFrame = { type: "ready"; processId: string } | { type: "exit"; exitCode: number | null } | { type: "error"; message: string };

function open(container: HTMLElement, url: string, events: TerminalEvents): TerminalHandle {
  const term = new Terminal({
    cursorBlink: true,
    fontSize: 13,
    fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace",
    theme: { background: "#0f1115", foreground: "#d7dae0" },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(container);
  fit.fit();
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  const send = (frame: object) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  ws.addEventListener("message", (event: MessageEvent<ArrayBuffer | string>) => {
    if (typeof event.data !== "string") {
      term.write(new Uint8Array(event.data));
      return;
    }
    const frame = JSON.parse(event.data) as ServerFrame;
    if (frame.type === "ready") {
      events.onStatus(`attached to ${frame.processId}`);
      send({ type: "resize", cols: term.cols, rows: term.rows });
      term.focus();
    } else if (frame.type === "exit") events.onExit(frame.exitCode);
    else events.onStatus(frame.message);
  });
  ws.addEventListener("close", () => events.onStatus("detached"));
  term.onData((data) => send({ type: "input", data }));
  term.onResize(({ cols, rows }) => send({ type: "resize", cols, rows }));
  const observer = new ResizeObserver(() => fit.fit());
  observer.observe(container);
  return {
    close() {
      send({ type: "close" });
      ws.close();
      observer.disconnect();
      term.dispose();
    },
  };
}

(window as unknown as { AgentRuntimeTerminal: { open: typeof open } }).AgentRuntimeTerminal = { open };
