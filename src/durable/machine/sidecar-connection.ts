/**
 * How a sidecar's tunnel is accepted and greeted (docs/architecture.md, "The machine object"): the upgrade
 * the worker's tunnel route hands over (checked against the object's own name and the machine's token
 * generation; a newer connection replaces the old), and the sidecar's `hello` (its protocol and machine
 * checked, its heartbeat and upload window kept in the socket's attachment), and where each of its frames
 * goes.
 */
import { closeReason } from "../../lib/close-reason";
import { parseSidecarFrame, type SidecarFrame, subsOf, TUNNEL_PROTOCOL_VERSION } from "@agent-runtime/protocol/frames";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { problemResponse } from "../../lib/problem-response";
import type { Subscribers } from "../streams/subscribers";
import { attachmentOf, SIDECAR_TAG, sendFrame, setAttachment, type TunnelAttachment } from "./tunnel";

export interface AcceptHost {
  /** The object's own name (it is created by idFromName(machine)); null for an object made otherwise. */
  name: string | null;
  /** The machine's current token generation: older tokens were revoked. */
  generation(): Promise<number>;
  sockets(tag: string): WebSocket[];
  accept(ws: WebSocket, tags: string[]): void;
}

/** Accept a sidecar's tunnel (a 101), or say why not. */
export async function acceptSidecar(request: Request, host: AcceptHost): Promise<Response> {
  const machine = host.name ?? request.headers.get("x-machine-id");
  if (host.name && request.headers.get("x-machine-id") !== host.name) {
    return problemResponse({ code: "invalid_request", detail: "this tunnel request is not for this machine" });
  }
  const generation = Number(request.headers.get("x-token-generation"));
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !machine || !Number.isSafeInteger(generation)) {
    return problemResponse({ code: "invalid_request", detail: "expected a WebSocket upgrade from a sidecar" });
  }
  // The one piece of per-machine trust state: tokens older than the current generation were revoked.
  if (generation < (await host.generation())) {
    return problemResponse({ code: "token_invalid", detail: `the tokens of machine '${machine}' minted before were revoked; ask an admin for a new one` });
  }
  // A new authenticated connection replaces the old one (e.g. the sidecar restarted).
  for (const old of host.sockets(SIDECAR_TAG)) {
    try {
      old.close(4000, "replaced by a newer connection of this machine");
    } catch {
      // already closing
    }
  }
  const { 0: client, 1: server } = new WebSocketPair();
  host.accept(server, [SIDECAR_TAG]);
  setAttachment(server, { machine, connectedAtMs: Date.now(), hello: false, generation, heartbeatMs: LIMITS.heartbeatMs });
  return new Response(null, { status: 101, webSocket: client });
}

/**
 * The sidecar said hello: its attachment, now greeted (heartbeat and upload window kept), or null when the
 * socket was closed for a wrong protocol, a wrong machine or an unreadable state (the sidecar is told why).
 */
export function greet(ws: WebSocket, hello: Extract<SidecarFrame, { t: "hello" }>): TunnelAttachment | null {
  const attachment = attachmentOf(ws);
  if (!attachment) {
    ws.close(4003, "this connection's state is unreadable; reconnect");
    return null;
  }
  if (hello.protocol !== TUNNEL_PROTOCOL_VERSION || hello.machine !== attachment.machine) {
    const reason =
      hello.machine !== attachment.machine
        ? `this tunnel belongs to machine '${attachment.machine}'`
        : `tunnel protocol ${hello.protocol} is not supported (this worker speaks ${TUNNEL_PROTOCOL_VERSION}); update the sidecar`;
    sendFrame(ws, { t: "bye", reason });
    ws.close(4002, closeReason(reason));
    return null;
  }
  const heartbeatMs = typeof hello.heartbeatMs === "number" && hello.heartbeatMs >= 100 ? hello.heartbeatMs : LIMITS.heartbeatMs;
  const greeted: TunnelAttachment = {
    ...attachment,
    hello: true,
    heartbeatMs,
    ...(hello.uploadWindow ? { uploadWindow: hello.uploadWindow } : {}),
    ...(hello.preview ? { preview: hello.preview } : {}),
  };
  setAttachment(ws, greeted);
  return greeted;
}

export interface FrameHandlers {
  /** A call's answer (`res`) or failure (`err`). */
  answered(frame: Extract<SidecarFrame, { t: "res" | "err" }>): void;
  /** Whoever receives the machine's streams. */
  subscribers: Pick<Subscribers, "deliver" | "output" | "end">;
  hello(frame: Extract<SidecarFrame, { t: "hello" }>): Promise<void>;
  /** A proxied request's or WebSocket's frame (durable/preview/). */
  preview(frame: Extract<SidecarFrame, { t: "ph" | "pd" | "pw" | "px" }>): void;
  /** What listens on the machine changed. */
  ports(): void;
  /** An agent's own login flow asks a person something, or ended. */
  login(agent: string): void;
}

/**
 * One message of the sidecar's, parsed and handed where it goes; one it cannot read is answered with `bad` and logged.
 * Not async: a call's answer, the relay's hot path, is handed on at once (a promise only where a handler makes one, a hello).
 */
export function readSidecarFrame(ws: WebSocket, message: string | ArrayBuffer, to: FrameHandlers): Promise<void> | undefined {
  const parsed = parseSidecarFrame(message);
  if (!parsed.ok) {
    // A sidecar that sends what we cannot read is told so, and it is logged: never dropped silently.
    console.error(`machine tunnel: ${parsed.error}`);
    sendFrame(ws, { t: "bad", error: parsed.error });
    return;
  }
  const frame = parsed.frame;
  switch (frame.t) {
    case "res":
    case "err":
      to.answered(frame);
      return;
    case "bad":
      console.error(`machine tunnel: the sidecar could not read a frame: ${frame.error}`);
      return;
    // One batch may be for several subscriptions of the same stream (`also`): read once, handed to each.
    case "ev":
      for (const sub of subsOf(frame)) to.subscribers.deliver(sub, frame.events, frame.gap);
      return;
    case "out":
      for (const sub of subsOf(frame)) to.subscribers.output(sub, frame.pieces, frame.bytes);
      return;
    case "end":
      to.subscribers.end(frame.sub, frame.end);
      return;
    case "hello":
      return to.hello(frame);
    case "ports":
      to.ports();
      return;
    case "login":
      to.login(frame.agent);
      return;
    case "ph":
    case "pd":
    case "pw":
    case "px":
      to.preview(frame);
      return;
  }
}
