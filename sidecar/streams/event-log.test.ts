import { describe, expect, it } from "vitest";
import { EventLog } from "./event-log";

describe("EventLog", () => {
  it("numbers entries from 1 and returns those after a sequence", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    for (const n of [1, 2, 3]) log.append(JSON.stringify({ n }));
    expect(log.since(1).events.map(([seq]) => seq)).toEqual([2, 3]);
    expect(log.lastSeq).toBe(3);
  });

  it("drops the oldest past its limits and reports the gap to a reader behind it", () => {
    const log = new EventLog({ maxEvents: 2, maxBytes: 1 << 20 });
    for (const n of [1, 2, 3, 4]) log.append(JSON.stringify({ n }));
    const { events, gap } = log.since(0);
    expect(gap).toEqual({ from: 1, to: 2 });
    expect(events.map(([seq]) => seq)).toEqual([3, 4]);
  });

  it("bounds a batch by bytes, but always gives at least one entry", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    for (let i = 0; i < 5; i++) log.append(JSON.stringify("x".repeat(100)));
    expect(log.since(0, Infinity, 250).events).toHaveLength(2);
    expect(log.since(0, Infinity, 10).events).toHaveLength(1);
  });

  it("turns an entry larger than a frame into a gap of its own, after what came before it", () => {
    const log = new EventLog({ maxEvents: 100, maxBytes: 1 << 20 });
    log.append('"small"');
    log.append(JSON.stringify("x".repeat(1000)));
    log.append('"after"');
    const first = log.since(0, Infinity, Infinity, 500);
    expect(first.events.map(([seq]) => seq)).toEqual([1]);
    expect(first.gap).toBeUndefined();
    expect(log.since(1, Infinity, Infinity, 500)).toEqual({ events: [], gap: { from: 2, to: 2, tooLarge: true } });
    expect(log.since(2, Infinity, Infinity, 500).events.map(([seq]) => seq)).toEqual([3]);
  });
});
