/**
 * One outbound stream of an ACP connection (the connection's own, or one session's): messages wait here
 * until the client's SSE GET takes them, each delivered once. A stream opened again takes over from the
 * one before (which ends): the client opens a session's stream anew after aborting the old one, and over
 * worker → object → client hops the abort can arrive after the new GET.
 */
import { LIMITS } from "../protocol/limits";

const encoder = new TextEncoder();

export const ACP_SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
} as const;

export class Mailbox {
  private queue: string[] = [];
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  private keepAlive: ReturnType<typeof setInterval> | null = null;
  private ended = false;

  /** `queued` reports each change of the bytes waiting here (the connection bounds their sum). */
  constructor(private readonly queued: (delta: number) => void) {}

  get hasReceiver(): boolean {
    return this.controller !== null;
  }

  get isEmpty(): boolean {
    return this.queue.length === 0;
  }

  /** One JSON-RPC message as its JSON text. */
  push(json: string): void {
    if (this.ended) return;
    this.queue.push(json);
    this.queued(json.length);
    this.drain();
  }

  /** The SSE body for a new receiver; a receiver before it ends. */
  open(onRelease: () => void): ReadableStream<Uint8Array> {
    this.release();
    let mine: ReadableStreamDefaultController<Uint8Array> | null = null;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          mine = controller;
          this.controller = controller;
        },
        pull: () => this.drain(),
        cancel: () => {
          if (this.controller === mine) this.detach();
          onRelease();
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
    );
    this.keepAlive = setInterval(() => this.write(":\n\n"), LIMITS.keepAliveMs);
    this.drain();
    return body;
  }

  /** No more messages: the receiver's stream ends (with an error event first when there is one to tell). */
  end(error?: { detail: string }): void {
    if (this.ended) return;
    this.ended = true;
    this.queued(-this.queue.reduce((n, m) => n + m.length, 0));
    this.queue = [];
    if (error) this.write(`event: error\ndata: ${JSON.stringify({ detail: error.detail })}\n\n`);
    this.release();
  }

  /** Hand the receiver what waits, as far as its buffer allows (the rest waits for its next pull). */
  private drain(): void {
    const controller = this.controller;
    if (!controller) return;
    while (this.queue.length > 0 && (controller.desiredSize ?? 0) > 0) {
      const json = this.queue.shift() as string;
      this.queued(-json.length);
      if (!this.write(`data: ${json}\n\n`)) return;
    }
  }

  private write(text: string): boolean {
    try {
      this.controller?.enqueue(encoder.encode(text));
      return this.controller !== null;
    } catch {
      this.detach();
      return false;
    }
  }

  private release(): void {
    const controller = this.controller;
    this.detach();
    try {
      controller?.close();
    } catch {
      // cancelled already
    }
  }

  private detach(): void {
    this.controller = null;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = null;
  }
}
