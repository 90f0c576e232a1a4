/**
 * One SSE reader attached to a machine stream. It turns tunnel `ev` batches into
 * `text/event-stream` frames, remembers the last sequence it delivered (so a reconnected
 * tunnel resumes exactly there) and keeps the connection alive with comments.
 */
import type { StreamEnd, StreamEvent, StreamGap, StreamRef, WorkerFrame } from "@agent-runtime/protocol/frames";
import { LIMITS } from "@agent-runtime/protocol/limits";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { errorEvent, SseBody } from "./sse-body";
import type { Subscriber } from "./subscribers";

/** Bytes queued for one reader that does not read; past this it is told to resume later and closed. */
export const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

export class SseReader implements Subscriber {
  private lastSeq: number;
  readonly body: SseBody;
  /** ACP messages are `message` events (as acp-http-client reads them), process output `log` events (as the sandbox-agent SDK does). */
  private readonly eventName: "message" | "log";
  private acceptedResolve: ((outcome: Outcome<void>) => void) | null = null;
  private acceptedOutcome: Outcome<void> | null = null;

  constructor(
    readonly sub: string,
    private readonly stream: StreamRef,
    after: number,
    private readonly onClose: (sub: string) => void,
    /** A stream with no event for this long is ended (its reader reconnects when it wants more). */
    idleCloseMs: number = LIMITS.sseIdleCloseMs,
    /** An event this reader never sees (a permission request the team's policy answers); its sequence is passed. */
    private readonly hides: (seq: number, text: string) => boolean = () => false,
  ) {
    this.lastSeq = after;
    this.eventName = stream.kind === "logs" ? "log" : "message";
    // A reader that stays attached to a stream where nothing happens would keep the machine's object in
    // memory for ever (a laptop that went to sleep never closes its connection). After idleCloseMs without
    // an event the stream ends with a `retry:` hint; a client resumes with Last-Event-ID and loses nothing.
    this.body = new SseBody({
      onClose: () => this.onClose(this.sub),
      idle: {
        ms: idleCloseMs,
        farewell: () => `: idle for ${idleCloseMs} ms; reconnect with Last-Event-ID: ${this.lastSeq} for more\nretry: 10000\n\n`,
      },
    });
  }

  subscribeFrame(): WorkerFrame {
    return { t: "sub", sub: this.sub, stream: this.stream, after: this.lastSeq, packed: true, shared: true };
  }

  /** Resolves when the sidecar acknowledged the subscription (its first `ev`), or with the problem that refused it. */
  accepted(timeoutMs: number): Promise<Outcome<void>> {
    if (this.acceptedOutcome) return Promise.resolve(this.acceptedOutcome);
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => this.settle({ ok: false, problem: { code: "timeout", detail: "the machine did not open the stream in time" } }),
        timeoutMs,
      );
      this.acceptedResolve = (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      };
    });
  }

  private settle(outcome: Outcome<void>): void {
    if (this.acceptedOutcome) return;
    this.acceptedOutcome = outcome;
    this.acceptedResolve?.(outcome);
    if (!outcome.ok) this.close();
  }

  response(): Response {
    return this.body.response();
  }

  deliver(events: StreamEvent[], gap?: StreamGap): void {
    this.settle({ ok: true, value: undefined });
    let text = "";
    if (gap && gap.to > this.lastSeq) {
      text += errorEvent({
        code: "stream_error",
        detail: gap.tooLarge
          ? `message ${gap.from} was larger than the tunnel carries (${LIMITS.maxFrameBytes} bytes) and was not delivered`
          : `messages ${gap.from}..${gap.to} were dropped: the buffer limit was reached before they were read`,
        extensions: { dropped: { from: gap.from, to: gap.to } },
      });
      this.lastSeq = gap.to; // resume after it, never before it: a reconnect is not told the same gap again
    }
    for (const [seq, json] of events) {
      if (seq <= this.lastSeq) continue; // a replay after reconnect may overlap what was already delivered
      this.lastSeq = seq;
      if (this.hides(seq, json)) continue;
      text += `id: ${seq}\nevent: ${this.eventName}\ndata: ${json}\n\n`;
    }
    if (text) {
      this.write(text);
      this.body.touch();
    }
  }

  end(end: StreamEnd): void {
    if (!this.acceptedOutcome && end.code === "not_found") {
      this.settle({ ok: false, problem: { code: "not_found", detail: `no such ${this.stream.kind === "acp" ? "ACP server" : "process"}` } });
      return;
    }
    this.settle({ ok: true, value: undefined });
    this.write(`event: end\ndata: ${end.json}\n\n`);
    this.close();
  }

  fail(problem: ProblemInit): void {
    if (!this.acceptedOutcome) {
      this.settle({ ok: false, problem });
      return;
    }
    this.write(errorEvent(problem));
    this.close();
  }

  private write(text: string): void {
    if (this.body.write(text) && this.body.room < -MAX_QUEUED_BYTES) this.tooSlow();
  }

  /** Nothing is lost: the machine keeps the messages, and the reader resumes from its last id. */
  private tooSlow(): void {
    const frame = errorEvent({
      code: "stream_error",
      detail: `this reader fell more than ${MAX_QUEUED_BYTES} bytes behind; reconnect with Last-Event-ID: ${this.lastSeq} to resume`,
      extensions: { lastEventId: this.lastSeq },
    });
    this.body.write(frame); // past write(): this frame must not trigger the check again
    this.close();
  }

  private close(): void {
    this.body.close();
  }
}
