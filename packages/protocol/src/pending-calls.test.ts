import { describe, expect, it, vi } from "vitest";
import { PendingCalls, SWEEP_MS } from "./pending-calls";

describe("PendingCalls", () => {
  it("settles a call once, with its answer", async () => {
    const calls = new PendingCalls<string, number>();
    const answer = calls.wait("a", undefined, null);
    expect(calls.has("a")).toBe(true);
    expect(calls.settle("a", { ok: true, value: 1 })).toBe(true);
    expect(calls.settle("a", { ok: true, value: 2 })).toBe(false);
    expect(await answer).toEqual({ ok: true, value: 1 });
    expect(calls.size).toBe(0);
  });

  it("settles at the deadline with what onDeadline says, and tells it which call", async () => {
    vi.useFakeTimers();
    try {
      const calls = new PendingCalls<string, number, { op: string }>();
      const onDeadline = vi.fn((key: string, meta: { op: string }) => ({ code: "timeout" as const, detail: `${key} ${meta.op}` }));
      const answer = calls.wait("k", { op: "x" }, 1000, onDeadline);
      vi.advanceTimersByTime(999);
      expect(calls.has("k")).toBe(true);
      vi.advanceTimersByTime(1);
      expect(await answer).toEqual({ ok: false, problem: { code: "timeout", detail: "k x" } });
      expect(onDeadline).toHaveBeenCalledOnce();
      expect(calls.settle("k", { ok: true, value: 1 })).toBe(false); // a late answer finds nobody
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps its deadlines on a monotonic clock: a step of the wall clock neither fails a call nor delays one", async () => {
    vi.useFakeTimers();
    try {
      const calls = new PendingCalls<string, number>();
      const answer = calls.wait("k", undefined, 5_000);
      // The wall clock jumps an hour ahead (an NTP step), then an hour back: the call's five seconds still hold.
      vi.setSystemTime(Date.now() + 3_600_000);
      vi.advanceTimersByTime(SWEEP_MS);
      expect(calls.has("k")).toBe(true);
      vi.setSystemTime(Date.now() - 7_200_000);
      vi.advanceTimersByTime(5_000 - SWEEP_MS);
      expect(calls.has("k")).toBe(false);
      expect(await answer).toMatchObject({ ok: false });
    } finally {
      vi.useRealTimers();
    }
  });

  it("fails each of two calls at its own deadline, the later one made first", async () => {
    vi.useFakeTimers();
    try {
      const calls = new PendingCalls<string, number>();
      const late = calls.wait("late", undefined, 5_000);
      const early = calls.wait("early", undefined, 300);
      const none = calls.wait("none", undefined, null);
      vi.advanceTimersByTime(299);
      expect([calls.has("early"), calls.has("late")]).toEqual([true, true]);
      vi.advanceTimersByTime(1);
      expect(await early).toEqual({ ok: false, problem: { code: "timeout", detail: "no answer within 300 ms" } });
      vi.advanceTimersByTime(4_699);
      expect(calls.has("late")).toBe(true);
      vi.advanceTimersByTime(1);
      expect(await late).toEqual({ ok: false, problem: { code: "timeout", detail: "no answer within 5000 ms" } });
      vi.advanceTimersByTime(60_000);
      expect(calls.has("none")).toBe(true); // no deadline: it waits for its answer
      calls.settle("none", { ok: true, value: 1 });
      expect(await none).toEqual({ ok: true, value: 1 });
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps one timer for many calls, and none once they are answered and the sweep has passed", async () => {
    vi.useFakeTimers();
    try {
      const calls = new PendingCalls<number, number>();
      const answers: Promise<unknown>[] = [];
      for (let i = 0; i < 100; i++) {
        answers.push(calls.wait(i, undefined, 30_000));
        if (i % 2 === 0) calls.settle(i, { ok: true, value: i }); // answered at once, as a relay's round trips are
      }
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(SWEEP_MS); // the sweep finds the 50 unanswered still within their deadline
      expect(calls.size).toBe(50);
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(30_000 - SWEEP_MS);
      expect(calls.size).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      const results = await Promise.all(answers);
      expect(results.filter((r) => (r as { ok: boolean }).ok)).toHaveLength(50);
      calls.wait(-1, undefined, 30_000);
      calls.settle(-1, { ok: true, value: 0 });
      vi.advanceTimersByTime(SWEEP_MS);
      expect(vi.getTimerCount()).toBe(0); // an idle set of calls leaves no timer behind
    } finally {
      vi.useRealTimers();
    }
  });

  it("fails at the deadline a timer set only for setTimeout (a clock that did not move) says", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const calls = new PendingCalls<string, number>();
      const answer = calls.wait("k", undefined, 50);
      vi.advanceTimersByTime(50);
      expect(await answer).toMatchObject({ ok: false, problem: { code: "timeout" } });
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses a second waiter for the same key", () => {
    const calls = new PendingCalls<string, number>();
    void calls.wait("a", undefined, null);
    expect(() => calls.wait("a", undefined, null)).toThrow(/already waiting/);
  });

  it("settles all, or those picked by their meta, and lists the rest in order", async () => {
    const calls = new PendingCalls<string, number, { to: string | null }>();
    const a = calls.wait("a", { to: "boot-1" }, null);
    const b = calls.wait("b", { to: null }, null);
    const c = calls.wait("c", { to: "boot-1" }, null);
    expect(calls.settleAll((meta) => (meta.to === "boot-1" ? { ok: false, problem: { code: "machine_restarted", detail: "gone" } } : null))).toBe(2);
    expect((await a).ok).toBe(false);
    expect((await c).ok).toBe(false);
    expect([...calls.waiting()].map(([key]) => key)).toEqual(["b"]);
    calls.setMeta("b", { to: "boot-2" });
    expect(calls.meta("b")).toEqual({ to: "boot-2" });
    calls.settleAll(() => ({ ok: true, value: 7 }));
    expect(await b).toEqual({ ok: true, value: 7 });
  });
});
