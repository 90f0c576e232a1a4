/**
 * A live reader of one session's transcript (`GET /v1/sessions/{id}/transcript` with
 * `Accept: text/event-stream`): `event: entry` with `id: <seq>` for each entry as it is written or
 * grows (readers keep entries by seq, replacing one they see again), `event: session` with the record
 * when its state changes. Resuming with `Last-Event-ID: n` sends entry n again (it may have grown) and
 * all after it.
 */
import type { Session, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { SseBody } from "../streams/sse-body";
import type { SessionListener } from "./live-sessions";

export class TranscriptFollower implements SessionListener {
  private readonly body: SseBody;
  private stopListening: () => void = () => {};

  constructor(idleCloseMs: number) {
    // As the machine's streams do: a reader of a session where nothing happens does not keep the object in memory for ever.
    this.body = new SseBody({ onClose: () => this.stopListening(), idle: { ms: idleCloseMs, farewell: () => "retry: 10000\n\n" } });
  }

  /**
   * Start with what is stored, then follow. `listen` registers this follower with the recorder; `hold`
   * hands its body to its holder (it ends with the token that opened it).
   */
  start(record: Session, stored: TranscriptEntry[], listen: (l: SessionListener) => () => void, hold: (body: SseBody) => void): Response {
    this.stopListening = listen(this);
    hold(this.body);
    this.record(record);
    this.entries(stored);
    return this.body.response();
  }

  entries(entries: TranscriptEntry[]): void {
    if (entries.length === 0) return;
    this.body.write(entries.map((e) => `id: ${e.seq}\nevent: entry\ndata: ${JSON.stringify(e)}\n\n`).join(""));
    this.body.touch();
  }

  record(session: Session): void {
    this.body.write(`event: session\ndata: ${JSON.stringify(session)}\n\n`);
  }
}
