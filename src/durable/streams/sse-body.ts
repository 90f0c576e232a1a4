/**
 * The body of one `text/event-stream` response served by a Durable Object: its bytes, a keep-alive
 * comment every LIMITS.keepAliveMs, an optional close after a quiet while (so a reader attached to
 * nothing that happens does not keep the object in memory for ever), and one close that runs once,
 * whoever starts it. The stream readers, the transcript follower and ACP's transport all write here.
 */
import { LIMITS } from "@agent-runtime/protocol/limits";
import { problemBody, type ProblemInit } from "@agent-runtime/protocol/problems";

const encoder = new TextEncoder();

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
} as const;

/** An `event: error` frame carrying a problem body (readers that only handle `message` skip it). */
export function errorEvent(problem: ProblemInit): string {
  return `event: error\ndata: ${JSON.stringify(problemBody(problem))}\n\n`;
}

export interface SseBodyOptions {
  /** Runs once, when the body closes (by either side). */
  onClose?: () => void;
  /** Close after this long without `touch()`, writing `farewell()` first (a `retry:` hint, where to resume). */
  idle?: { ms: number; farewell: () => string };
  /** The reader wants more (for a writer that holds messages until then). */
  pull?: () => void;
  /** Bytes queued for the reader before `desiredSize` turns negative. */
  highWaterMark?: number;
}

export class SseBody {
  readonly stream: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private readonly keepAlive: ReturnType<typeof setInterval>;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  /** When `touch()` was last called (Date.now()): the idle close counts from here. */
  private touchedAt = 0;
  private closed = false;
  /** Who else waits for the close (stream holders, docs/architecture.md "Streams end with their token"). */
  private readonly closeListeners: (() => void)[] = [];

  constructor(private readonly options: SseBodyOptions = {}) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: () => options.pull?.(),
        cancel: () => this.close(),
      },
      new ByteLengthQueuingStrategy({ highWaterMark: options.highWaterMark ?? 64 * 1024 }),
    );
    this.keepAlive = setInterval(() => this.write(": keep-alive\n\n"), LIMITS.keepAliveMs);
    this.touch();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** How much more the reader's buffer takes before it is full (negative: bytes beyond it). */
  get room(): number {
    return this.closed ? 0 : (this.controller.desiredSize ?? 0);
  }

  /**
   * Something happened: the idle close starts counting again. Only the time is noted: a stream in full
   * flow touches its body at every batch (at every update when each comes alone), and a timer cleared and
   * set each time was work for nothing. The one timer, when it fires, sets itself again for what is left.
   */
  touch(): void {
    const idle = this.options.idle;
    if (!idle || this.closed) return;
    this.touchedAt = Date.now();
    this.idleTimer ??= this.idleCheck(idle, idle.ms);
  }

  private idleCheck(idle: NonNullable<SseBodyOptions["idle"]>, afterMs: number): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      this.idleTimer = null;
      if (this.closed) return;
      const left = this.touchedAt + idle.ms - Date.now();
      if (left > 0) {
        this.idleTimer = this.idleCheck(idle, left);
        return;
      }
      this.write(idle.farewell());
      this.close();
    }, afterMs);
  }

  /** Whether the text was queued (false once closed). */
  write(text: string): boolean {
    if (this.closed) return false;
    try {
      this.controller.enqueue(encoder.encode(text));
      return true;
    } catch {
      this.close();
      return false;
    }
  }

  response(): Response {
    return new Response(this.stream, { headers: SSE_HEADERS });
  }

  /** Runs `listener` once when the body closes (at once if it has). */
  whenClosed(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** The stream ends for a reason the reader is told in a last `event: error` (a problem body). */
  fail(problem: ProblemInit): void {
    this.write(errorEvent(problem));
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    try {
      this.controller.close();
    } catch {
      // the reader went away first
    }
    this.options.onClose?.();
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
