import { describe, expect, it, vi } from "vitest";
import { PendingCalls } from "./pending-calls";

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
