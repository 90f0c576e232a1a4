import { describe, expect, it } from "vitest";
import { takeEvents } from "./sse";

describe("takeEvents", () => {
  it("reads whole events, keeps a partial one for later and skips keep-alive comments", () => {
    const first = takeEvents('event: entry\nid: 3\ndata: {"seq":3}\n\n: keep-alive\n\ndata: {"a"');
    expect(first.events).toEqual([{ event: "entry", id: "3", data: { seq: 3 } }]);
    expect(first.rest).toBe('data: {"a"');
    const second = takeEvents(`${first.rest}:1}\n\n`);
    expect(second.events).toEqual([{ event: "message", id: null, data: { a: 1 } }]);
    expect(second.rest).toBe("");
  });

  it("joins data spread over several lines", () => {
    expect(takeEvents('data: {"a":\ndata: 2}\n\n').events[0]!.data).toEqual({ a: 2 });
  });
});
