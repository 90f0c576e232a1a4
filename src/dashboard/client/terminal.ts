/**
 * The dashboard's terminal (xterm.js, bundled by scripts/build.ts and served from the worker: no CDN). It attaches to a tty process's terminal WebSocket and speaks the frames the
 * runtime serves (docs/architecture.md, "Terminals"): output as binary messages, `ready`/`exit`/`error`
 * as JSON text; it sends `input` and `resize`. A dropped socket (a phone that slept, a network change) is
 * dialed again with a fresh ticket; the process's output is replayed from its start, so the screen is
 * drawn anew rather than repeated.
 */
import { type TerminalClientFrame, TerminalServerFrame } from "@agent-runtime/protocol/processes";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import type { RefObject } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { must, typed } from "./api";
import { nextWaitMs, STREAM_BACKOFF } from "./follow";
import { withCtrl } from "./keys";

export interface TerminalEvents {
  onStatus(text: string): void;
  onExit(exitCode: number | null): void;
}

export interface TerminalHandle {
  /** Type this as if on the keyboard (the row of keys a phone lacks). */
  input(data: string): void;
  /** The next key typed is sent with Ctrl held (a phone has no Ctrl key). */
  armCtrl(): void;
  /**
   * The machine is back: dial now, not at the end of the wait (which doubles up to 30 s while it is away).
   * Nothing while a dial is on its way or attached: a terminal is never dropped to be dialed again.
   */
  redial(): void;
  close(): void;
}

/** `url` is asked again for every dial: a ticket lives a minute. */
export function openTerminal(container: HTMLElement, url: () => Promise<string>, events: TerminalEvents): TerminalHandle {
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
  let ws: WebSocket | null = null;
  let closed = false;
  let attempts = 0;
  /** The wait before the last redial (the views' one policy, follow.ts); null once attached again. */
  let waitMs: number | null = null;
  /** Between two dials: the next one's timer, or "stopped" when the ticket could not be had (nothing dials by itself). */
  let idle: ReturnType<typeof setTimeout> | "stopped" | null = null;
  let ctrl = false;
  const send = (frame: TerminalClientFrame) => {
    if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  const dial = async () => {
    if (closed) return;
    idle = null;
    let address: string;
    try {
      address = await url();
    } catch (err) {
      idle = "stopped";
      events.onStatus(`could not reconnect: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    const socket = new WebSocket(address);
    ws = socket;
    socket.binaryType = "arraybuffer";
    let replaying = true;
    socket.addEventListener("message", (event: MessageEvent<ArrayBuffer | string>) => {
      if (typeof event.data !== "string") {
        // After a reconnect the output comes again from the start: draw the screen anew.
        if (replaying && attempts > 0) term.reset();
        replaying = false;
        term.write(new Uint8Array(event.data));
        return;
      }
      const parsed = TerminalServerFrame.safeParse(JSON.parse(event.data));
      if (!parsed.success) return;
      const frame = parsed.data;
      if (frame.type === "ready") {
        attempts = 0;
        waitMs = null;
        events.onStatus(`attached to ${frame.processId}`);
        send({ type: "resize", cols: term.cols, rows: term.rows });
        term.focus();
      } else if (frame.type === "exit") {
        closed = true;
        events.onExit(frame.exitCode);
      } else events.onStatus(frame.message);
    });
    socket.addEventListener("close", () => {
      if (closed || ws !== socket) return;
      const wait = nextWaitMs(STREAM_BACKOFF, waitMs, "failed");
      waitMs = wait;
      attempts++;
      events.onStatus(`disconnected: reconnecting in ${wait / 1000} s`);
      idle = setTimeout(() => void dial(), wait);
    });
  };
  void dial();
  term.onData((data) => {
    const typed = ctrl ? withCtrl(data) : data;
    ctrl = false;
    send({ type: "input", data: typed });
  });
  term.onResize(({ cols, rows }) => send({ type: "resize", cols, rows }));
  const observer = new ResizeObserver(() => fit.fit());
  observer.observe(container);
  return {
    input(data) {
      send({ type: "input", data });
      term.focus();
    },
    armCtrl() {
      ctrl = true;
      term.focus();
    },
    redial() {
      if (closed || idle === null) return;
      if (idle !== "stopped") clearTimeout(idle);
      void dial();
    },
    close() {
      closed = true;
      if (idle !== null && idle !== "stopped") clearTimeout(idle);
      send({ type: "close" });
      ws?.close();
      observer.disconnect();
      term.dispose();
    },
  };
}

/**
 * The terminal view's one hook: a terminal in `box` attached to process `processId` of the machine whose
 * API is `v1` (none while it is null), for as long as the view shows it; every dial (a reconnect too) asks
 * for a one-minute ticket, since a browser cannot put a header on a WebSocket. `status` says where it is
 * (the view may say more with `say`). `connected`: the machine's presence as the page's header shows it;
 * when it turns true, a terminal waiting to dial again dials at once (an attached one is left alone).
 */
export function useTerminal(
  box: RefObject<HTMLElement | null>,
  v1: string,
  processId: string | null,
  connected: boolean | null,
  events: { idle: string; onExit: (exitCode: number | null) => void },
): { status: string; say: (text: string) => void; handle: RefObject<TerminalHandle | null> } {
  const [status, say] = useState(events.idle);
  const handle = useRef<TerminalHandle | null>(null);
  const onExit = useRef(events.onExit);
  onExit.current = events.onExit;
  useEffect(() => {
    const container = box.current;
    if (!processId || !container) return;
    const url = async () => {
      const { ticket } = await must(typed.POST("/v1/tickets"));
      return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${v1}/processes/${encodeURIComponent(processId)}/terminal/ws?access_token=${encodeURIComponent(ticket)}`;
    };
    container.scrollIntoView({ block: "nearest" }); // xterm.js draws only while the terminal is on screen
    const opened = openTerminal(container, url, {
      onStatus: say,
      onExit: (code) => {
        say(`the shell exited (${code})`);
        onExit.current(code);
      },
    });
    handle.current = opened;
    return () => {
      opened.close();
      handle.current = null;
    };
  }, [v1, processId]);
  useEffect(() => {
    if (connected) handle.current?.redial();
  }, [connected]);
  return { status, say, handle };
}
