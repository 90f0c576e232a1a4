/**
 * The SSE readers of a machine's streams (ACP servers' messages, processes' logs), in memory: a reader
 * lives as long as its HTTP response, which keeps the object awake anyway. Each is subscribed at the
 * sidecar under its own id, and answered only once the sidecar accepted that subscription; its body is
 * handed to its holder (stream-holders.ts) so that it ends with the token that opened it.
 */
import type { StreamRef, WorkerFrame } from "@agent-runtime/protocol/frames";
import { problemResponse } from "../../lib/problem-response";
import { offline } from "../machine/tunnel";
import { SseReader } from "./sse-reader";
import type { SseBody } from "./sse-body";
import { SubscriberMap, type SubscriberKind } from "./subscribers";

export interface ReaderHost {
  /** Send a frame to the connected sidecar, if one is (a reader is subscribed again when one is back). */
  send(frame: WorkerFrame): void;
  /** Whether a call made now can be answered (connected, or within the reconnect grace). */
  reachable(): boolean;
  newId(): string;
  idleCloseMs: number;
  /** How long the sidecar may take to accept a subscription: a reconnect's grace. */
  acceptMs: number;
  /** An event of an ACP server's stream no reader sees: a permission request the team's policy answers (policy/permission-gate.ts). */
  hides(serverId: string, seq: number, text: string): boolean;
}

export class SseReaders extends SubscriberMap<SseReader> {
  /** The readers are one kind of the machine's subscribers (a registered feature: machine/feature.ts). */
  readonly subscribers: SubscriberKind = this;

  constructor(private readonly host: ReaderHost) {
    super();
  }

  /**
   * Open a reader on one of the machine's streams, from sequence `after` on. Answers only once the
   * sidecar has accepted the subscription, so an unknown stream is a 404, not an empty stream.
   */
  async open(stream: StreamRef, after: number, hold: (body: SseBody) => void): Promise<Response> {
    if (!this.host.reachable()) return problemResponse(offline());
    const reader = new SseReader(
      this.host.newId(),
      stream,
      after,
      (sub) => {
        this.delete(sub);
        this.host.send({ t: "unsub", sub });
      },
      this.host.idleCloseMs,
      (seq, text) => stream.kind === "acp" && this.host.hides(stream.serverId, seq, text),
    );
    this.add(reader);
    this.host.send(reader.subscribeFrame());
    const accepted = await reader.accepted(this.host.acceptMs);
    if (!accepted.ok) {
      this.delete(reader.sub);
      return problemResponse(accepted.problem);
    }
    hold(reader.body);
    return reader.response();
  }
}
