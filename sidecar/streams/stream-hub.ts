/**
 * Serves the worker's stream subscriptions from event logs. Each subscription has a cursor
 * (the last sequence sent); new entries are sent in batches, at most one frame per turn of the
 * event loop, and not faster than the socket drains. Since the logs keep their entries, a
 * subscription re-opened after a reconnect simply starts from the worker's cursor.
 */
import { joinPieces, type PackedEvents, packEvents, type SidecarFrame, type StreamGap, type StreamRef } from "@agent-runtime/protocol/frames";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { LogEntry } from "@agent-runtime/protocol/processes";
import type { EventLog } from "./event-log";
import { encodePackedEvents } from "./packed-frame";

/** One frame's worth of a log after `cursor`: bounded by count and bytes. */
function batch(log: EventLog, cursor: number) {
  return log.since(cursor, MAX_EVENTS_PER_FRAME, MAX_FRAME_EVENT_BYTES, MAX_EVENT_BYTES);
}

export type ResolvedStream =
  /** A stream that exists (or existed: `goneWhenCaughtUp` makes a caught-up reader a 404). */
  | { log: EventLog; goneWhenCaughtUp?: boolean }
  /** Not there yet (an ACP server whose first POST is still on its way): wait for it. */
  | { wait: (ready: () => void) => () => void }
  | null;

export type StreamResolver = (ref: StreamRef) => ResolvedStream;

/**
 * The cursor after a batch: its last event, or past the gap it reported. A gap is said once: a cursor left
 * before it (a restored agent's log starts after what the old one wrote) made every acknowledgement send
 * the same gap again, a loop that starved the tunnel for seconds.
 */
function advance(cursor: number, events: [number, string][], gap?: { to: number; tooLarge?: boolean }): number {
  if (events.length) return events[events.length - 1]![0];
  return gap ? Math.max(cursor, gap.to) : cursor;
}

interface Subscription {
  ref: StreamRef;
  /** The machine's session recorder rather than a person reading. */
  recorder: boolean;
  /** A terminal viewer: a process's output goes as the bytes written (`out` frames), not as log entries. */
  bytes: boolean;
  /** The worker reads batches packed (`packEvents`): the events' JSON texts cross as they are. */
  packed: boolean;
  /** The worker reads a batch addressed to several subscriptions (`also`): one frame serves all that are at the same point. */
  shared: boolean;
  cursor: number;
  log: EventLog | null;
  detach: () => void;
  scheduled: boolean;
  /** When this subscription last sent a frame (performance.now()): a stream in full flow is gathered, not sent line by line. */
  lastSentAt: number;
}

/** Enough to amortize a frame, small enough not to build megabyte strings (memory) or stall other streams. */
const MAX_EVENTS_PER_FRAME = 256;
/** Frames are bounded by bytes too; one message bigger than a frame may be is reported as a gap instead. */
const MAX_FRAME_EVENT_BYTES = 1024 * 1024;
const MAX_EVENT_BYTES = LIMITS.maxFrameBytes - 64 * 1024;
const HIGH_WATER_BYTES = 4 * 1024 * 1024;
/**
 * How long entries of a stream in full flow are gathered into one frame (see schedule). Each frame costs
 * a write on the tunnel's socket (a loopback packet's work in the kernel), a wake-up of the machine's
 * object and a write to each reader: the stream bench's agent (10,000 updates in well under a second) got
 * frames of 55–80 updates at 2 ms and 110–160 at 8 ms (under MAX_EVENTS_PER_FRAME); a person reading sees
 * them 8 ms later at most, and an agent's tokens 20 ms apart are not gathered at all.
 */
export const GATHER_MS = 8;
/** A reader waiting for a server that never comes is released after this long. */
const WAIT_LIMIT_MS = 60_000;

export class StreamHub {
  private readonly subs = new Map<string, Subscription>();

  constructor(
    private readonly resolve: StreamResolver,
    private readonly send: (frame: SidecarFrame | PackedEvents) => void,
    private readonly bufferedAmount: () => number,
    /** Sends a frame already encoded for the tunnel: when given, a packed batch is built straight into its bytes (packed-frame.ts). */
    private readonly sendEncoded: ((message: Uint8Array) => void) | null = null,
  ) {}

  subscribe(sub: string, ref: StreamRef, after: number, options: { recorder?: boolean; output?: "bytes"; packed?: boolean; shared?: boolean } = {}): void {
    this.unsubscribe(sub);
    const subscription: Subscription = {
      ref,
      recorder: options.recorder ?? false,
      bytes: options.output === "bytes" && ref.kind === "logs",
      packed: options.packed ?? false,
      shared: options.shared ?? false,
      cursor: after,
      log: null,
      detach: () => {},
      scheduled: false,
      lastSentAt: Number.NEGATIVE_INFINITY,
    };
    this.subs.set(sub, subscription);
    this.bind(sub, subscription, true);
  }

  private bind(sub: string, s: Subscription, first: boolean): void {
    const resolved = this.resolve(s.ref);
    if (resolved === null) {
      this.finish(sub, { code: "not_found", json: JSON.stringify({ reason: "not_found" }) });
      return;
    }
    if ("wait" in resolved) {
      const stopWaiting = resolved.wait(() => {
        clearTimeout(timer);
        stopWaiting();
        if (this.subs.get(sub) === s) this.bind(sub, s, false);
      });
      const timer = setTimeout(() => {
        stopWaiting();
        if (this.subs.get(sub) === s) this.finish(sub, { code: "not_found", json: JSON.stringify({ reason: "not_found" }) });
      }, WAIT_LIMIT_MS);
      s.detach = () => {
        clearTimeout(timer);
        stopWaiting();
      };
      if (first) this.send({ t: "ev", sub, events: [] }); // accepted: the reader may start listening
      return;
    }
    const { log, goneWhenCaughtUp } = resolved;
    if (first && goneWhenCaughtUp && log.ended && log.lastSeq <= s.cursor) {
      this.finish(sub, { code: "not_found", json: log.ended.json });
      return;
    }
    s.log = log;
    s.detach = log.onChange(() => this.schedule(sub, s), !s.recorder);
    this.sendNext(sub, s, log, true); // even empty: it tells the worker the subscription is accepted
    this.schedule(sub, s);
  }

  private schedule(sub: string, s: Subscription): void {
    if (s.scheduled) return;
    s.scheduled = true;
    // The first entry after a quiet spell goes out on the next turn of the loop. While entries keep coming
    // (an agent streaming), they are gathered for GATHER_MS: one frame of many entries costs the machine's
    // object one wake-up and the reader one write, where a frame per pipe read (a handful of lines) costs
    // them for each. A call's answer still flushes first (flushAll), so no answer waits on this.
    if (performance.now() - s.lastSentAt < GATHER_MS) setTimeout(() => this.flush(sub, s), GATHER_MS);
    else setImmediate(() => this.flush(sub, s));
  }

  private flush(sub: string, s: Subscription): void {
    s.scheduled = false;
    if (this.subs.get(sub) !== s || !s.log) return;
    if (this.bufferedAmount() > HIGH_WATER_BYTES) {
      // The socket is behind: wait for it instead of queueing more in memory (the log keeps the entries).
      s.scheduled = true;
      setTimeout(() => this.flush(sub, s), 5);
      return;
    }
    this.sendNext(sub, s, s.log);
    if (s.cursor < s.log.lastSeq) {
      // More than a frame was waiting: the rest is there already, nothing to gather.
      s.scheduled = true;
      setImmediate(() => this.flush(sub, s));
    } else if (s.log.ended) {
      this.finish(sub, s.log.ended);
    }
  }

  /**
   * Send what every subscription has pending, now. Called before a call's answer goes out, so an
   * agent's messages that came before its response reach the readers before the response reaches
   * the caller (e.g. a prompt's last chunks before its `end_turn`).
   */
  flushAll(): void {
    for (const [sub, s] of this.subs) {
      if (!s.log || s.cursor >= s.log.lastSeq) continue;
      while (this.sendNext(sub, s, s.log)) {
        // until the subscription has caught up
      }
    }
  }

  /** Send the next frame's worth of `log` after the cursor; true when the cursor moved. */
  private sendNext(sub: string, s: Subscription, log: EventLog, evenIfEmpty = false): boolean {
    const { events, gap } = batch(log, s.cursor);
    if (!events.length && !gap && !evenIfEmpty) return false;
    const before = s.cursor;
    // Others at the same point of the same stream get this batch in the same frame (the session recorder
    // and a person reading one agent): one frame to build and send, one for the machine's object to read.
    const sharing = events.length || gap ? this.sharing(s, log) : [];
    const cursor = advance(s.cursor, events, gap);
    const sentAt = events.length ? performance.now() : null;
    for (const member of [s, ...sharing.map(([, other]) => other)]) {
      member.cursor = cursor;
      if (sentAt !== null) member.lastSentAt = sentAt;
    }
    const also = sharing.length ? sharing.map(([id]) => id) : undefined;
    if (!s.bytes && s.packed && events.length && this.sendEncoded) this.sendEncoded(encodePackedEvents(sub, events, gap, also));
    else
      this.send(
        s.bytes
          ? outputFrame(sub, events, gap, also)
          : s.packed && events.length
            ? packEvents(sub, events, gap, also)
            : { t: "ev", sub, ...(also ? { also } : {}), events, ...(gap ? { gap } : {}) },
      );
    return s.cursor !== before;
  }

  /** The other subscriptions that can take `s`'s next batch in its frame: same stream, same point, same form. */
  private sharing(s: Subscription, log: EventLog): [string, Subscription][] {
    if (!s.shared) return [];
    const found: [string, Subscription][] = [];
    for (const entry of this.subs) {
      const other = entry[1];
      if (other !== s && other.shared && other.log === log && other.cursor === s.cursor && other.bytes === s.bytes && other.packed === s.packed)
        found.push(entry);
    }
    return found;
  }

  private finish(sub: string, end: { code: "exited" | "deleted" | "not_found"; json: string }): void {
    this.unsubscribe(sub);
    this.send({ t: "end", sub, end });
  }

  unsubscribe(sub: string): void {
    const s = this.subs.get(sub);
    if (!s) return;
    s.detach();
    this.subs.delete(sub);
  }

  /** The tunnel dropped: the worker re-opens what it still needs after reconnecting. */
  clear(): void {
    for (const sub of [...this.subs.keys()]) this.unsubscribe(sub);
  }
}

/**
 * A batch of a process's log entries as the bytes the process wrote: one binary frame, no JSON or base64
 * for the machine's object to undo before a terminal viewer gets them. An entry that is not a log entry
 * (never written by this sidecar) becomes an empty piece, so the viewer's sequence still moves past it.
 */
function outputFrame(sub: string, events: [number, string][], gap: StreamGap | undefined, also: string[] | undefined): SidecarFrame {
  const { pieces, bytes } = joinPieces(
    events.map(([seq, json]) => {
      const entry = LogEntry.safeParse(parseJson(json));
      return [seq, entry.success ? Buffer.from(entry.data.data, entry.data.encoding === "base64" ? "base64" : "utf8") : Buffer.alloc(0)];
    }),
  );
  return { t: "out", sub, ...(also ? { also } : {}), pieces, ...(gap ? { gap } : {}), bytes };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
