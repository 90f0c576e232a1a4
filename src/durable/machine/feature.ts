/**
 * What a feature of the machine's object may take part in (docs/architecture.md, "Features of an object"):
 * each implements only what it needs, and is registered by one line in `features.ts`. The object's wiring
 * (machine-core.ts), its sidecar's comings and goings (sidecar-lifecycle.ts), its other sockets
 * (client-sockets.ts) and its one alarm (storage/alarm.ts) go through this list, never through a feature by
 * name. Modelled on miniflare's plugins: one interface, each part optional.
 */
import type { SidecarFrame } from "@agent-runtime/protocol/frames";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { Timed } from "../storage/alarm";
import type { SubscriberKind } from "../streams/subscribers";
import type { TeamObject } from "../team/team";
import type { ObjectRequest } from "./object-requests";

/** What the team answers a machine's connect: its documents, the versions it recorded, the subscriptions that hear of it. */
export type Registered = Awaited<ReturnType<TeamObject["machineConnected"]>>;

export type HelloFrame = Extract<SidecarFrame, { t: "hello" }>;

/** The machine is back: who it is, and what the team answered to its connect (null: the team could not be reached). */
export interface Back {
  machine: string;
  registered: Registered | null;
}

/** Client sockets of one kind (a tag given when accepted), found again by that tag after the object slept. */
export interface SocketKind {
  readonly tag: string;
  message(ws: WebSocket, message: string | ArrayBuffer): void | Promise<void>;
  closed(ws: WebSocket, code: number, reason: string): void | Promise<void>;
  /** Its holder's token was revoked or expired: it ends with its kind's last word. */
  end(ws: WebSocket, problem: ProblemInit): void;
}

export interface MachineFeature extends Timed {
  /** A worker's private request to the object (object-requests.ts): answered if it is this feature's kind, else null. */
  fetch?(request: Request, asked: ObjectRequest): Response | Promise<Response> | null;
  /** The sidecar said hello, before anything is asked or resumed: what must hold before an agent starts. */
  hello?(frame: HelloFrame): void;
  /** The team answered the connect and the welcome went out; calls and streams are not resumed yet. */
  connected?(back: Back): Promise<void>;
  /** Calls and streams resumed after a hello: the work that waited for the machine goes out. */
  resumed?(back: Back): void;
  /** The tunnel's socket closed and no newer one replaced it (the reconnect grace starts). */
  gone?(machine: string | null): void | Promise<void>;
  /** Away for good: the grace passed without a hello. */
  away?(problem: ProblemInit, machine: string): void;
  /** The sidecar came back as a new process: what lived in the old one is gone. */
  restarted?(problem: ProblemInit): void;
  /** The machine's streams this feature follows (one subscriber model: streams/subscribers.ts). */
  readonly subscribers?: SubscriberKind;
  /** The client sockets this feature holds. */
  readonly sockets?: SocketKind;
}
