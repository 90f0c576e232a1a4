/**
 * A live reader of one session's transcript (`GET /v1/sessions/{id}/transcript` with
 * `Accept: text/event-stream`): `event: entry` with `id: <seq>` for each entry as it is written or
 * grows (readers keep entries by seq, replacing one they see again), `event: session` with the record
 * when its state changes. Resuming with `Last-Event-ID: n` sends entry n again (it may have grown) and
 * all after it.
 */
import { LIMITS } from "../../protocol/limits";
import type { Session, TranscriptEntry } from "../../protocol/sessions";
import { SSE_HEADERS } from "../sse-reader";
import type { SessionListener } from "./recorder";

const encoder = new TextEncoder();

export class TranscriptFollower implements SessionListener {
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private readonly body: ReadableStream<Uint8Array>;
  private readonly keepAlive: ReturnType<typeof setInterval>;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private stopListening: () => void = () => {};

  constructor(private readonly idleCloseMs: number) {
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
      },
      cancel: () => this.close(),
    });
    this.keepAlive = setInterval(() => this.write(": keep-alive\n\n"), LIMITS.keepAliveMs);
    this.armIdle();
  }

  /** Start with what is stored, then follow. `listen` registers this follower with the recorder. */
  start(record: Session, stored: TranscriptEntry[], listen: (l: SessionListener) => () => void): Response {
    this.stopListening = listen(this);
    this.record(record);
    this.entries(stored);
    return new Response(this.body, { headers: SSE_HEADERS });
  }

  entries(entries: TranscriptEntry[]): void {
    if (entries.length === 0) return;
    this.write(entries.map((e) => `id: ${e.seq}\nevent: entry\ndata: ${JSON.stringify(e)}\n\n`).join(""));
    this.armIdle();
  }

  record(session: Session): void {
    this.write(`event: session\ndata: ${JSON.stringify(session)}\n\n`);
  }

  /** As the machine's streams do: a reader of a session where nothing happens does not keep the object in memory for ever. */
  private armIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.write("retry: 10000\n\n");
      this.close();
    }, this.idleCloseMs);
  }

  private write(text: string): void {
    if (this.closed) return;
    try {
      this.controller.enqueue(encoder.encode(text));
    } catch {
      this.close();
    }
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.stopListening();
    try {
      this.controller.close();
    } catch {
      // the reader went away first
    }
  }
}
