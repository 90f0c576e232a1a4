/**
 * Terminal viewers (docs/architecture.md, "Terminals"): WebSockets of browsers and SDK clients attached to
 * a tty process, held by the machine's object with the hibernation API. Each viewer is its own
 * subscription to the process's output, from the first byte on (so a late viewer sees what was already
 * written); the subscription id is also the socket's tag, so output that arrives after the object slept
 * still finds its viewer. Frames are those the sandbox-agent SDK speaks: output as binary messages,
 * `ready`/`exit`/`error` as JSON text, and `input`/`resize`/`close` from the client.
 */
import { z } from "zod";
import { fromBase64 } from "../lib/base64";
import type { OutputPiece, StreamEnd, StreamEvent, WorkerFrame } from "@agent-runtime/protocol/frames";
import { LogEntry, TerminalSize } from "@agent-runtime/protocol/processes";
import type { Subscriber, SubscriberKind } from "./subscribers";

export const TERMINAL_TAG = "terminal";
export const TERMINAL_PATH_PREFIX = "/_terminal/";

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

/** What a client may send; anything else is answered with an error frame. */
export const TerminalClientFrame = z.discriminatedUnion("type", [
  z.object({ type: z.literal("input"), data: z.string().max(256 * 1024), encoding: z.enum(["utf8", "base64"]).optional() }),
  TerminalSize.extend({ type: z.literal("resize") }),
  z.object({ type: z.literal("close") }),
]);
export type TerminalClientFrame = z.infer<typeof TerminalClientFrame>;

type ServerFrame = { type: "ready"; processId: string } | { type: "exit"; exitCode: number | null } | { type: "error"; message: string };

export function sendControl(ws: WebSocket, frame: ServerFrame): void {
  try {
    ws.send(JSON.stringify(frame));
  } catch {
    // the viewer went away; its close handler cleans up
  }
}

/** A viewer asks for the output as bytes (`out` frames); a sidecar that does not know them sends log entries (`ev`). */
export function subscribeFrame(viewer: ViewerAttachment): WorkerFrame {
  return { t: "sub", sub: viewer.sub, stream: { kind: "logs", processId: viewer.processId }, after: viewer.after, output: "bytes" };
}

const encoder = new TextEncoder();

/** Output for one viewer: `ready` on the first batch (the sidecar accepted the subscription), then each piece after what it has. */
function sendToViewer(ws: WebSocket, viewer: ViewerAttachment, pieces: Iterable<readonly [seq: number, bytes: () => Uint8Array | null]>): void {
  let { after } = viewer;
  try {
    if (!viewer.ready) ws.send(JSON.stringify({ type: "ready", processId: viewer.processId } satisfies ServerFrame));
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

/**
 * The viewers as subscribers of their processes' output: their state is in their sockets' attachments,
 * so a viewer is found by its tag even after the object slept.
 */
export class TerminalViewers implements SubscriberKind {
  constructor(private readonly sockets: (tag: string) => WebSocket[]) {}

  find(sub: string): Subscriber | null {
    const ws = this.sockets(viewerTag(sub))[0];
    return ws ? viewerSubscriber(ws) : null;
  }

  all(): Subscriber[] {
    // A viewer closing (or closed by fail) is not subscribed again.
    return this.sockets(TERMINAL_TAG).flatMap((ws) => (ws.readyState === WebSocket.OPEN ? (viewerSubscriber(ws) ?? []) : []));
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
