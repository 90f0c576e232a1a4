/**
 * The session recorder's subscriptions (docs/architecture.md, "Sessions"): one per ACP server a client
 * talks to, `rec:<serverId>`, the same across restarts of the machine's object, from what it recorded
 * last. What it hears goes to the recorder and to ACP's remote transport.
 */
import type { StreamEvent, WorkerFrame } from "@agent-runtime/protocol/frames";
import type { Subscriber, SubscriberKind } from "../streams/subscribers";

const RECORDER_PREFIX = "rec:";

export interface RecorderSink {
  events(serverId: string, events: StreamEvent[]): void;
  ended(serverId: string, endJson: string): void;
  /** The sequence the subscription starts after: what the recorder has of this server's stream. */
  after(serverId: string): number;
}

export class RecorderSubscriptions implements SubscriberKind {
  /** The servers whose stream is followed. */
  private readonly following = new Set<string>();

  constructor(private readonly sink: RecorderSink) {}

  /** Follow a server's stream; the `sub` frame to send, or null when it is followed already. */
  follow(serverId: string): WorkerFrame | null {
    if (this.following.has(serverId)) return null;
    this.following.add(serverId);
    return this.subscriber(serverId).subscribeFrame();
  }

  find(sub: string): Subscriber | null {
    return sub.startsWith(RECORDER_PREFIX) ? this.subscriber(sub.slice(RECORDER_PREFIX.length)) : null;
  }

  all(): Subscriber[] {
    return [...this.following].map((serverId) => this.subscriber(serverId));
  }

  private subscriber(serverId: string): Subscriber {
    const sub = `${RECORDER_PREFIX}${serverId}`;
    return {
      sub,
      subscribeFrame: () => ({
        t: "sub",
        sub,
        stream: { kind: "acp", serverId },
        after: this.sink.after(serverId),
        recorder: true,
        packed: true,
        shared: true,
      }),
      deliver: (events) => {
        this.following.add(serverId); // after this object slept, the sidecar's subscription is still there
        this.sink.events(serverId, events);
      },
      end: (end) => {
        this.following.delete(serverId);
        this.sink.ended(serverId, end.json);
      },
      // The records outlive their source: subscribed again, a restarted sidecar answers that the server is
      // gone (`end`), and the session is marked so.
      fail: () => {},
    };
  }
}
