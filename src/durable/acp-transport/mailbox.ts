/**
 * One outbound stream of an ACP connection (the connection's own, or one session's): messages wait here
 * until the client's SSE GET takes them, each delivered once. A stream opened again takes over from the
 * one before (which ends): the client opens a session's stream anew after aborting the old one, and over
 * worker → object → client hops the abort can arrive after the new GET.
 */
import { SseBody } from "../streams/sse-body";

export class Mailbox {
  private queue: string[] = [];
  private receiver: SseBody | null = null;
  private ended = false;

  /** `queued` reports each change of the bytes waiting here (the connection bounds their sum). */
  constructor(private readonly queued: (delta: number) => void) {}

  get hasReceiver(): boolean {
    return this.receiver !== null;
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

  /**
   * The SSE response of a new receiver; a receiver before it ends. Never closed for being idle: the SDK's
   * client takes the end of its connection's stream for the end of the connection.
   */
  open(hold: (body: SseBody) => void, onRelease: () => void): Response {
    const previous = this.receiver;
    const receiver: SseBody = new SseBody({
      pull: () => this.drain(),
      onClose: () => {
        // Only the current receiver's end releases the stream (not one it took over from).
        if (this.receiver !== receiver) return;
        this.receiver = null;
        onRelease();
      },
    });
    this.receiver = receiver;
    hold(receiver);
    previous?.close();
    this.drain();
    return receiver.response();
  }

  /** No more messages: the receiver's stream ends (with an error event first when there is one to tell). */
  end(error?: { detail: string }): void {
    if (this.ended) return;
    this.ended = true;
    this.queued(-this.queue.reduce((n, m) => n + m.length, 0));
    this.queue = [];
    if (error) this.receiver?.write(`event: error\ndata: ${JSON.stringify({ detail: error.detail })}\n\n`);
    this.receiver?.close();
  }

  /** Hand the receiver what waits, as far as its buffer allows (the rest waits for its next pull). */
  private drain(): void {
    const receiver = this.receiver;
    while (receiver && receiver.room > 0) {
      const json = this.queue.shift();
      if (json === undefined) return;
      this.queued(-json.length);
      if (!receiver.write(`data: ${json}\n\n`)) return;
    }
  }
}
