import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SseBody } from "./sse-body";

beforeEach(() => {
  vi.useFakeTimers();
});
// The spies first: one on the faked setTimeout, restored after the real timers came back, would put the
// fake back as the global setTimeout for every file after this one (the unit tests share their globals).
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("an SSE body's idle close", () => {
  const idle = { ms: 1000, farewell: () => ": bye\n\n" };

  it("comes idle.ms after the last touch, not after the first, with the farewell written last", async () => {
    const body = new SseBody({ idle });
    const reader = body.stream.getReader();
    vi.advanceTimersByTime(600);
    body.write("data: 1\n\n");
    body.touch();
    vi.advanceTimersByTime(600); // 1,200 ms from the start, 600 from the touch
    expect(body.isClosed).toBe(false);
    vi.advanceTimersByTime(399);
    expect(body.isClosed).toBe(false);
    vi.advanceTimersByTime(1);
    expect(body.isClosed).toBe(true);
    let text = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text).toBe("data: 1\n\n: bye\n\n");
  });

  it("keeps one timer however often it is touched (a stream in full flow touches it at every batch)", () => {
    const setTimer = vi.spyOn(globalThis, "setTimeout");
    const body = new SseBody({ idle });
    for (let i = 0; i < 100; i++) {
      vi.advanceTimersByTime(5);
      body.touch();
    }
    expect(setTimer).toHaveBeenCalledTimes(1);
    // Fired once at 1,000 ms, it set itself again for what was left since the last touch (at 500 ms).
    vi.advanceTimersByTime(500);
    expect(setTimer).toHaveBeenCalledTimes(2);
    expect(body.isClosed).toBe(false);
    vi.advanceTimersByTime(1000);
    expect(body.isClosed).toBe(true);
  });

  it("is not said on a body closed first", () => {
    const body = new SseBody({ idle });
    const written = vi.spyOn(body, "write");
    body.close();
    vi.advanceTimersByTime(5000);
    expect(written).not.toHaveBeenCalled();
  });
});
