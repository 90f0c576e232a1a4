/**
 * A live reader of every session record of one machine (`GET /v1/sessions/events`, merged across machines
 * by the route): `event: session` with a record when its state or its queue changes, `event: machine` when
 * the machine comes or goes, `event: ports` when what listens on it changes (its sidecar says so). It carries no transcript: the dashboard's waiting count and list follow it,
 * reading the list again when it says something changed.
 */
import type { Session } from "@agent-runtime/protocol/sessions";
import { SseBody } from "../streams/sse-body";
import type { SessionsWatcher } from "./live-sessions";

export class SessionsWatch implements SessionsWatcher {
  private readonly body: SseBody;
  private stopWatching: () => void = () => {};

  constructor(
    private readonly machine: string,
    idleCloseMs: number,
  ) {
    // As a transcript's follower: a watch where nothing happens ends (its reader opens it again), so a page
    // left open does not keep the machine's object in memory for ever.
    this.body = new SseBody({ onClose: () => this.stopWatching(), idle: { ms: idleCloseMs, farewell: () => "retry: 10000\n\n" } });
  }

  start(watch: (w: SessionsWatcher) => () => void, hold: (body: SseBody) => void): Response {
    this.stopWatching = watch(this);
    hold(this.body);
    // A first event: the reader knows it is following (and reads the list once, in case it changed meanwhile).
    this.machineChanged();
    return this.body.response();
  }

  record(session: Session): void {
    this.body.write(`event: session\ndata: ${JSON.stringify({ id: session.id, machine: session.machine, state: session.state })}\n\n`);
    this.body.touch();
  }

  machineChanged(): void {
    this.body.write(`event: machine\ndata: ${JSON.stringify({ machine: this.machine })}\n\n`);
  }

  portsChanged(): void {
    this.body.write(`event: ports\ndata: ${JSON.stringify({ machine: this.machine })}\n\n`);
  }
}
