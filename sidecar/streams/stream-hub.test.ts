import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { encodeFrame, type PackedEvents, packEvents, parseSidecarFrame, type SidecarFrame } from "@agent-runtime/protocol/frames";
import { EventLog } from "./event-log";
import { GATHER_MS, StreamHub } from "./stream-hub";

/** A frame as the machine's object reads it off the tunnel. */
function parsed(frame: SidecarFrame | PackedEvents): SidecarFrame {
  const read = parseSidecarFrame(encodeFrame(frame));
  if (!read.ok) throw new Error(read.error);
  return read.frame;
}

function parseJsonFrame(wire: string | Uint8Array): SidecarFrame {
  const read = parseSidecarFrame(wire);
  if (!read.ok) throw new Error(read.error);
  return read.frame;
}

/** A hub serving every stream from `log`, with every frame it sends recorded as the machine's object reads it. */
function recordingHub(log: EventLog) {
  const frames: SidecarFrame[] = [];
  const hub = new StreamHub(
    () => ({ log }),
    (frame) => frames.push(parsed(frame)),
    () => 0,
    (message) => frames.push(parseJsonFrame(message)),
  );
  return { hub, frames };
}

/** A hub serving one ACP stream from `log` to one subscription, with every frame it sends recorded. */
function hubOn(log: EventLog) {
  const { hub, frames } = recordingHub(log);
  hub.subscribe("s1", { kind: "acp", serverId: "a" }, 0);
  const batches = () => frames.flatMap((f) => (f.t === "ev" && f.events.length ? [f.events.map(([seq]) => seq)] : []));
  return { hub, frames, batches };
}

describe("StreamHub", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "setImmediate", "performance"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends the first entry after a quiet spell on the next turn of the loop", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const { batches } = hubOn(log);
    log.append('"one"');
    vi.advanceTimersByTime(0); // one turn: setImmediate, no time passing
    expect(batches()).toEqual([[1]]);
    vi.advanceTimersByTime(50);
    log.append('"after a pause"');
    vi.advanceTimersByTime(0);
    expect(batches()).toEqual([[1], [2]]);
  });

  it("gathers a stream in full flow into one frame instead of one per turn", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const { batches } = hubOn(log);
    log.append('"first"');
    vi.advanceTimersByTime(0);
    // Entries arriving turn after turn, right after a frame went out: gathered for GATHER_MS.
    for (const n of [2, 3, 4]) {
      log.append(JSON.stringify(n));
      vi.advanceTimersByTime(0);
    }
    expect(batches()).toEqual([[1]]);
    vi.advanceTimersByTime(GATHER_MS - 1);
    expect(batches()).toEqual([[1]]);
    vi.advanceTimersByTime(1);
    expect(batches()).toEqual([[1], [2, 3, 4]]);
  });

  it("flushes what is pending at once when a call's answer is about to go out", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const { hub, batches } = hubOn(log);
    log.append('"first"');
    vi.advanceTimersByTime(0);
    log.append('"gathering"');
    hub.flushAll();
    expect(batches()).toEqual([[1], [2]]);
  });

  it("sends a terminal viewer a process's output as the bytes written, in one binary frame, when it asks", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const { hub, frames } = recordingHub(log);
    hub.subscribe("viewer", { kind: "logs", processId: "p1" }, 0, { output: "bytes" });
    hub.subscribe("reader", { kind: "logs", processId: "p1" }, 0);
    const entry = (sequence: number, encoding: "utf8" | "base64", data: string) => JSON.stringify({ sequence, timestampMs: 1, stream: "pty", encoding, data });
    log.append(entry(1, "utf8", "héllo "));
    log.append(entry(2, "base64", Buffer.from([0xff, 0x00, 0x1b]).toString("base64")));
    log.append('"not a log entry"');
    hub.flushAll();
    const out = frames.find((f) => f.t === "out" && f.pieces.length > 0);
    if (out?.t !== "out") throw new Error("no out frame");
    expect(out.pieces).toEqual([
      [1, 7],
      [2, 3],
      [3, 0],
    ]);
    expect([...out.bytes]).toEqual([...Buffer.from("héllo "), 0xff, 0x00, 0x1b]);
    // A reader that did not ask gets the log entries, as before.
    expect(frames.filter((f) => f.t === "ev" && f.sub === "reader" && f.events.length === 3)).toHaveLength(1);
  });

  it("sends a packed batch already encoded, as the protocol encodes it, when the tunnel takes encoded frames", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const sent: (SidecarFrame | PackedEvents)[] = [];
    const encoded: Uint8Array[] = [];
    const hub = new StreamHub(
      () => ({ log }),
      (frame) => sent.push(frame),
      () => 0,
      (message) => encoded.push(message),
    );
    hub.subscribe("packed", { kind: "acp", serverId: "a" }, 0, { packed: true });
    hub.subscribe("json", { kind: "acp", serverId: "a" }, 0);
    log.append('{"text":"ünïcode \\"quoted\\""}');
    log.append("{}");
    hub.flushAll();
    // The packed subscription's batch crossed encoded; its acceptance (an empty batch) and the JSON reader's, as frames.
    expect(encoded).toHaveLength(1);
    expect(sent.some((f) => "pieces" in f)).toBe(false);
    const events: [number, string][] = [
      [1, '{"text":"ünïcode \\"quoted\\""}'],
      [2, "{}"],
    ];
    expect(Buffer.from(encoded[0]!).equals(Buffer.from(encodeFrame(packEvents("packed", events))))).toBe(true);
    expect(parseJsonFrame(encoded[0]!)).toEqual({ t: "ev", sub: "packed", events });
  });

  it("packs a batch for a reader that asked (the events' texts as a binary frame's payload), and sends JSON to one that did not", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const sent: (SidecarFrame | PackedEvents)[] = [];
    const hub = new StreamHub(
      () => ({ log }),
      (frame) => sent.push(frame),
      () => 0,
    );
    hub.subscribe("packed", { kind: "acp", serverId: "a" }, 0, { packed: true });
    hub.subscribe("json", { kind: "acp", serverId: "a" }, 0);
    log.append('{"text":"ünïcode \\"quoted\\""}');
    log.append("{}");
    hub.flushAll();
    const wire = (sub: string) => sent.filter((f) => "sub" in f && f.sub === sub && ("pieces" in f || ("events" in f && f.events.length > 0))).map(encodeFrame);
    const [packed] = wire("packed");
    const [json] = wire("json");
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(typeof json).toBe("string");
    // Both read back as the same events.
    expect(parseSidecarFrame(packed!)).toEqual({ ok: true, frame: { ...parseJsonFrame(json!), sub: "packed" } });
    expect(parseSidecarFrame(packed!)).toMatchObject({
      ok: true,
      frame: {
        events: [
          [1, '{"text":"ünïcode \\"quoted\\""}'],
          [2, "{}"],
        ],
      },
    });
  });

  it("sends one frame for every subscription at the same point of a stream that takes shared batches", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    const { hub, frames } = recordingHub(log);
    const acp = { kind: "acp", serverId: "a" } as const;
    hub.subscribe("rec:a", acp, 0, { recorder: true, packed: true, shared: true });
    hub.subscribe("reader", acp, 0, { packed: true, shared: true });
    hub.subscribe("old-worker", acp, 0, { packed: true });
    log.append('"one"');
    log.append('"two"');
    hub.flushAll();
    const batches = () => frames.filter((f) => f.t === "ev" && f.events.length > 0);
    expect(batches()).toEqual([
      {
        t: "ev",
        sub: "rec:a",
        also: ["reader"],
        events: [
          [1, '"one"'],
          [2, '"two"'],
        ],
      },
      {
        t: "ev",
        sub: "old-worker",
        events: [
          [1, '"one"'],
          [2, '"two"'],
        ],
      },
    ]);
    // A reader that starts behind gets its own frame of what it missed, then the others' frames.
    hub.subscribe("late", acp, 0, { packed: true, shared: true });
    log.append('"three"');
    hub.flushAll();
    expect(batches().slice(2)).toEqual([
      {
        t: "ev",
        sub: "late",
        events: [
          [1, '"one"'],
          [2, '"two"'],
        ],
      },
      { t: "ev", sub: "rec:a", also: ["reader", "late"], events: [[3, '"three"']] },
      { t: "ev", sub: "old-worker", events: [[3, '"three"']] },
    ]);
    hub.unsubscribe("reader");
    log.append('"four"');
    vi.advanceTimersByTime(10);
    expect(batches().slice(5)).toEqual([
      { t: "ev", sub: "rec:a", also: ["late"], events: [[4, '"four"']] },
      { t: "ev", sub: "old-worker", events: [[4, '"four"']] },
    ]);
  });
});
