/**
 * A bounded, sequenced log of JSON texts: an ACP server's messages, a process's output.
 * Sequence numbers start at 1 and never repeat. When a limit is reached the oldest entries
 * go first, and readers asking for them are told exactly which ones are gone (`gap`).
 */
import type { StreamEnd, StreamEvent } from "@agent-runtime/protocol/frames";

export interface EventLogLimits {
  maxEvents: number;
  maxBytes: number;
}

export class EventLog {
  /** Dropped entries below `head` are undefined until the array is compacted. */
  private items: ({ seq: number; json: string } | undefined)[] = [];
  private head = 0; // index of the oldest kept item (shifting arrays is O(n); this is O(1))
  private bytes = 0;
  private next: number;
  private listeners = new Set<() => void>();
  /** Listeners that are people reading (not the machine's own recorder): an agent with none may be stopped when idle. */
  private readerCount = 0;
  /** Set once: the stream is over and nothing more will be appended. */
  ended: StreamEnd | null = null;

  /** `firstSeq`: a log that continues an earlier one (an agent started again) numbers on from it, so readers' cursors stay valid. */
  constructor(
    private readonly limits: EventLogLimits,
    firstSeq = 1,
  ) {
    this.next = firstSeq;
  }

  get readers(): number {
    return this.readerCount;
  }

  get lastSeq(): number {
    return this.next - 1;
  }

  /** Highest sequence number that was dropped (0 when none). */
  get droppedThrough(): number {
    return this.items.length > this.head ? this.items[this.head]!.seq - 1 : this.lastSeq;
  }

  append(json: string): number {
    if (this.ended) throw new Error("append after end");
    const seq = this.next++;
    this.items.push({ seq, json });
    this.bytes += json.length;
    while (this.items.length - this.head > this.limits.maxEvents || (this.bytes > this.limits.maxBytes && this.items.length - this.head > 1)) {
      this.bytes -= this.items[this.head]!.json.length;
      this.items[this.head] = undefined;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.notify();
    return seq;
  }

  end(end: StreamEnd): void {
    if (this.ended) return;
    this.ended = end;
    this.notify();
  }

  /** Everything after `after`, at most `max` entries, and the range a reader missed if the log dropped it. */
  /**
   * Entries after `after`: at most `max` of them and, past the first, at most `maxBytes` of JSON. An
   * entry larger than `maxEntryBytes` is never returned: it is reported as a gap of its own (`tooLarge`),
   * so one huge message cannot make a frame the tunnel refuses (docs/architecture.md, "Frames").
   */
  since(
    after: number,
    max = Infinity,
    maxBytes = Infinity,
    maxEntryBytes = Infinity,
  ): { events: StreamEvent[]; gap?: { from: number; to: number; tooLarge?: boolean } } {
    const dropped = this.droppedThrough;
    let gap: { from: number; to: number } | undefined;
    let from = after + 1;
    if (from <= dropped) {
      gap = { from, to: dropped };
      from = dropped + 1;
    }
    const events: StreamEvent[] = [];
    if (this.items.length === this.head) return { events, ...(gap ? { gap } : {}) };
    const first = this.items[this.head]!.seq;
    let bytes = 0;
    for (let i = this.head + (from - first); i < this.items.length && events.length < max; i++) {
      const item = this.items[i]!;
      if (item.json.length > maxEntryBytes) {
        // Deliver what came before first; the oversized entry is then a gap of its own.
        if (events.length || gap) break;
        return { events, gap: { from: item.seq, to: item.seq, tooLarge: true } };
      }
      if (events.length && bytes + item.json.length > maxBytes) break;
      bytes += item.json.length;
      events.push([item.seq, item.json]);
    }
    return { events, ...(gap ? { gap } : {}) };
  }

  onChange(listener: () => void, reader = true): () => void {
    const wrapped = () => listener();
    this.listeners.add(wrapped);
    if (reader) this.readerCount++;
    return () => {
      if (this.listeners.delete(wrapped) && reader) this.readerCount--;
    };
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}
