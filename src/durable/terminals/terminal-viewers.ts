/**
 * Terminal viewers (docs/architecture.md, "Terminals"): WebSockets of browsers and SDK clients attached to
 * a tty process, held by the machine's object with the hibernation API. Each viewer is its own
 * subscription to the process's output, from the first byte on (so a late viewer sees what was already
 * written); the subscription id is also the socket's tag, so output that arrives after the object slept
 * still finds its viewer. Frames are those the sandbox-agent SDK speaks: output as binary messages,
 * `ready`/`exit`/`error` as JSON text, and `input`/`resize`/`close` from the client.
 */
import type { MachineFeature, SocketKind } from "../machine/feature";
import type { ObjectRequest } from "../machine/object-requests";
import type { StreamHolder } from "../streams/stream-holders";
import { closeReason } from "../../lib/close-reason";
import { closeTextOf } from "../streams/stream-holders";
import { z } from "zod";
import { fromBase64 } from "../../lib/base64";
import type { OutputPiece, StreamEnd, StreamEvent, WorkerFrame } from "@agent-runtime/protocol/frames";
import { LogEntry, TerminalClientFrame, type TerminalServerFrame } from "@agent-runtime/protocol/processes";
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { problemResponse } from "../../lib/problem-response";
import { offline } from "../machine/tunnel";
import type { Subscriber, SubscriberKind } from "../streams/subscribers";

export const TERMINAL_TAG = "terminal";

/** The tag that finds the viewer of subscription `sub`. */
export function viewerTag(sub: string): string {
  return `term:${sub}`;
}

const ViewerAttachment = z.object({
  kind: z.literal("terminal"),
  processId: z.string(),
  sub: z.string(),
  /** The last output sequence this viewer was sent: a resumed subscription starts after it. */
  after: z.number().int(),
  ready: z.boolean(),
});
export type ViewerAttachment = z.infer<typeof ViewerAttachment>;

/** The one accessor of a viewer's attachment: null for any other socket (the sidecar's). */
export function viewerOf(ws: WebSocket): ViewerAttachment | null {
  const parsed = ViewerAttachment.safeParse(ws.deserializeAttachment());
  return parsed.success ? parsed.data : null;
}

export function sendControl(ws: WebSocket, frame: TerminalServerFrame): void {
  try {
    ws.send(JSON.stringify(frame));
  } catch {
    // the viewer went away; its close handler cleans up
  }
}

/** A viewer asks for the output as bytes (`out` frames); a sidecar that does not know them sends log entries (`ev`). */
export function subscribeFrame(viewer: ViewerAttachment): WorkerFrame {
  return { t: "sub", sub: viewer.sub, stream: { kind: "logs", processId: viewer.processId }, after: viewer.after, output: "bytes", shared: true };
}

const encoder = new TextEncoder();

/** Output for one viewer: `ready` on the first batch (the sidecar accepted the subscription), then each piece after what it has. */
function sendToViewer(ws: WebSocket, viewer: ViewerAttachment, pieces: Iterable<readonly [seq: number, bytes: () => Uint8Array | null]>): void {
  let { after } = viewer;
  try {
    if (!viewer.ready) ws.send(JSON.stringify({ type: "ready", processId: viewer.processId } satisfies TerminalServerFrame));
    for (const [seq, bytes] of pieces) {
      if (seq <= after) continue; // a resumed subscription may overlap what this viewer has
      after = seq;
      const piece = bytes();
      if (piece) ws.send(piece);
    }
    ws.serializeAttachment({ ...viewer, after, ready: true } satisfies ViewerAttachment);
  } catch {
    // the viewer went away; its close handler cleans up
  }
}

/** Output as log entries (`ev`, from a sidecar that does not send bytes): each decoded only if the viewer lacks it. */
export function deliverToViewer(ws: WebSocket, viewer: ViewerAttachment, events: StreamEvent[]): void {
  sendToViewer(
    ws,
    viewer,
    events.map(([seq, json]) => [seq, () => logEntryBytes(json)] as const),
  );
}

function logEntryBytes(json: string): Uint8Array | null {
  const entry = LogEntry.safeParse(JSON.parse(json));
  if (!entry.success) return null;
  return entry.data.encoding === "base64" ? fromBase64(entry.data.data) : encoder.encode(entry.data.data);
}

/** Output as the process wrote it (`out`): each piece goes out as it came, with no decoding. */
export function outputToViewer(ws: WebSocket, viewer: ViewerAttachment, pieces: OutputPiece[], bytes: Uint8Array): void {
  let offset = 0;
  sendToViewer(
    ws,
    viewer,
    pieces.map(([seq, length]) => {
      const piece = bytes.subarray(offset, offset + length);
      offset += length;
      return [seq, () => (length > 0 ? piece : null)] as const;
    }),
  );
}

/** The process ended (or never existed): the viewer is told how, then closed. */
export function endViewer(ws: WebSocket, end: StreamEnd): void {
  if (end.code === "exited") {
    const exit = z.object({ exitCode: z.number().nullable() }).safeParse(JSON.parse(end.json));
    sendControl(ws, { type: "exit", exitCode: exit.success ? exit.data.exitCode : null });
  } else {
    sendControl(ws, { type: "error", message: end.code === "not_found" ? "no such process" : "the process was removed" });
  }
  closeViewer(ws, 1000, "process ended");
}

export function closeViewer(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closed
  }
}

/** What the viewers need of the machine object. */
export interface TerminalHost {
  /** The object's hibernatable sockets with this tag. */
  sockets(tag: string): WebSocket[];
  accept(ws: WebSocket, tags: string[]): void;
  /** Send a frame to the connected sidecar, if one is (a viewer is subscribed again when one is back). */
  send(frame: WorkerFrame): void;
  /** Whether a call made now can be answered (connected, or within the reconnect grace). */
  reachable(): boolean;
  newId(): string;
  call<N extends "processes.input" | "processes.resize">(op: N, args: OpArgs<N>): Promise<Outcome<OpResult<N>>>;
  /** The tags that end a viewer's socket with its holder's token (streams/stream-holders.ts). */
  holderTags(holder: StreamHolder): string[];
}

/**
 * The viewers: attached, fed the output of their processes as subscribers, forwarding their input and
 * sizes, detached. Their state is in their sockets' attachments, so a viewer is found by its tag even
 * after the object slept.
 */
export class TerminalViewers implements SubscriberKind, MachineFeature {
  readonly subscribers: SubscriberKind = this;
  /** Viewers' sockets, found by their tag after the object slept; each viewer's state is its attachment. */
  readonly sockets: SocketKind = {
    tag: TERMINAL_TAG,
    message: (ws, message) => {
      const viewer = viewerOf(ws);
      return viewer ? this.message(ws, viewer, message) : undefined;
    },
    closed: (ws) => {
      const viewer = viewerOf(ws);
      if (viewer) this.detach(ws, viewer);
    },
    end: (ws, problem) => this.endWith(ws, problem),
  };

  constructor(private readonly host: TerminalHost) {}

  /** A terminal's upgrade (object-requests.ts), attached for the holder the route named. */
  fetch(request: Request, asked: ObjectRequest): Response | null {
    if (asked.kind !== "terminal") return null;
    if (!asked.holder) return problemResponse({ code: "invalid_request", detail: "a terminal is opened for someone: the route names its holder" });
    return this.attach(request, asked.process, this.host.holderTags(asked.holder));
  }

  /** The route checked the process (a running tty, docs/architecture.md "Terminals"); this attaches one more viewer. */
  attach(request: Request, processId: string, holderTags: string[]): Response {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !processId) {
      return problemResponse({ code: "invalid_request", detail: "expected a WebSocket upgrade for a process's terminal" });
    }
    if (!this.host.reachable()) return problemResponse(offline());
    const { 0: client, 1: server } = new WebSocketPair();
    const viewer: ViewerAttachment = { kind: "terminal", processId, sub: this.host.newId(), after: 0, ready: false };
    this.host.accept(server, [TERMINAL_TAG, viewerTag(viewer.sub), ...holderTags]);
    server.serializeAttachment(viewer);
    this.host.send(subscribeFrame(viewer));
    return new Response(null, { status: 101, webSocket: client });
  }

  /** A viewer's frame: input and sizes go to its process; `close` detaches it. */
  async message(ws: WebSocket, viewer: ViewerAttachment, message: string | ArrayBuffer): Promise<void> {
    let frame: TerminalClientFrame;
    try {
      const parsed = TerminalClientFrame.safeParse(JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message)));
      if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? "invalid");
      frame = parsed.data;
    } catch (err) {
      sendControl(ws, { type: "error", message: `not a terminal frame (input, resize or close): ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    if (frame.type === "close") {
      closeViewer(ws, 1000, "closed by the client");
      this.detach(ws, viewer);
      return;
    }
    const outcome =
      frame.type === "input"
        ? await this.host.call("processes.input", { id: viewer.processId, data: frame.data, encoding: frame.encoding ?? "utf8", eof: false })
        : await this.host.call("processes.resize", { id: viewer.processId, cols: frame.cols, rows: frame.rows });
    if (!outcome.ok) sendControl(ws, { type: "error", message: outcome.problem.detail });
  }

  detach(ws: WebSocket, viewer: ViewerAttachment): void {
    closeViewer(ws, 1000, "closed");
    this.host.send({ t: "unsub", sub: viewer.sub });
  }

  /** The token that opened this terminal was revoked or expired: it says why and closes (a terminal is the whole machine). */
  endWith(ws: WebSocket, problem: ProblemInit): void {
    sendControl(ws, { type: "error", message: problem.detail });
    closeViewer(ws, 1008, closeReason(closeTextOf(problem)));
    const viewer = viewerOf(ws);
    if (viewer) this.host.send({ t: "unsub", sub: viewer.sub });
  }

  find(sub: string): Subscriber | null {
    const ws = this.host.sockets(viewerTag(sub))[0];
    return ws ? viewerSubscriber(ws) : null;
  }

  all(): Subscriber[] {
    // A viewer closing (or closed by fail) is not subscribed again.
    return this.host.sockets(TERMINAL_TAG).flatMap((ws) => (ws.readyState === WebSocket.OPEN ? (viewerSubscriber(ws) ?? []) : []));
  }
}

function viewerSubscriber(ws: WebSocket): Subscriber | null {
  const viewer = viewerOf(ws);
  if (!viewer) return null;
  return {
    sub: viewer.sub,
    subscribeFrame: () => subscribeFrame(viewer),
    deliver: (events) => deliverToViewer(ws, viewer, events),
    output: (pieces, bytes) => outputToViewer(ws, viewer, pieces, bytes),
    end: (end) => endViewer(ws, end),
    fail: (problem) => {
      sendControl(ws, { type: "error", message: problem.detail });
      closeViewer(ws, 1011, "the machine went away");
    },
  };
}
