/**
 * Who receives a machine stream's `ev` and `end` frames (docs/architecture.md, "One subscriber model").
 * Three kinds of subscriber follow the machine's streams: SSE readers (in memory, for the life of their
 * response), terminal viewers (hibernatable WebSockets, found again by their tag after the object slept)
 * and the session recorder (one subscription per ACP server, `rec:<serverId>`). The machine's object sees
 * one interface: it hands each frame to the subscriber of its `sub`, re-subscribes them all when the
 * sidecar says hello, and fails them all when the stream's source is gone.
 */
import type { OutputPiece, StreamEnd, StreamEvent, StreamGap, WorkerFrame } from "@agent-runtime/protocol/frames";
import type { ProblemInit } from "@agent-runtime/protocol/problems";

export interface Subscriber {
  readonly sub: string;
  /** The `sub` frame that (re)opens this subscription from what it has already received. */
  subscribeFrame(): WorkerFrame;
  deliver(events: StreamEvent[], gap: StreamGap | undefined): void;
  /** A process's output as bytes (`out` frames), for a subscriber whose `sub` frame asked for them. */
  output?(pieces: OutputPiece[], bytes: Uint8Array): void;
  end(end: StreamEnd): void;
  /** The stream's source is gone for good (a restarted sidecar, a machine away past its grace). */
  fail(problem: ProblemInit): void;
}

/** One kind of subscriber, kept wherever that kind lives (a map, the hibernation API's tags). */
export interface SubscriberKind {
  find(sub: string): Subscriber | null;
  all(): Iterable<Subscriber>;
}

export class Subscribers {
  constructor(private readonly kinds: readonly SubscriberKind[]) {}

  find(sub: string): Subscriber | null {
    for (const kind of this.kinds) {
      const found = kind.find(sub);
      if (found) return found;
    }
    return null;
  }

  /** A snapshot: failing one may remove it from its kind. */
  all(): Subscriber[] {
    return this.kinds.flatMap((kind) => [...kind.all()]);
  }

  /** An `ev` frame for a subscription nobody holds any more (an unsubscribe crossing it) is dropped. */
  deliver(sub: string, events: StreamEvent[], gap: StreamGap | undefined): void {
    this.find(sub)?.deliver(events, gap);
  }

  output(sub: string, pieces: OutputPiece[], bytes: Uint8Array): void {
    this.find(sub)?.output?.(pieces, bytes);
  }

  end(sub: string, end: StreamEnd): void {
    this.find(sub)?.end(end);
  }

  fail(problem: ProblemInit): void {
    for (const subscriber of this.all()) subscriber.fail(problem);
  }

  subscribeFrames(): WorkerFrame[] {
    return this.all().map((subscriber) => subscriber.subscribeFrame());
  }
}

/** Subscribers held in memory by id (SSE readers). */
export class SubscriberMap<S extends Subscriber> implements SubscriberKind {
  private readonly bySub = new Map<string, S>();

  add(subscriber: S): void {
    this.bySub.set(subscriber.sub, subscriber);
  }

  delete(sub: string): void {
    this.bySub.delete(sub);
  }

  find(sub: string): S | null {
    return this.bySub.get(sub) ?? null;
  }

  all(): Iterable<S> {
    return this.bySub.values();
  }
}
