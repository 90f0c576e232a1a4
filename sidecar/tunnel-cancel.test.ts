import { describe, expect, it, vi } from "vitest";
import { CallCancel } from "./tunnel-cancel";

describe("CallCancel: a call's cancellation, made only when a handler asks", () => {
  it("tells each listener once, and one that comes after the cancel at once", () => {
    const call = new CallCancel();
    const before = vi.fn();
    call.onCancel(before);
    expect(call.cancelled).toBe(false);
    expect(before).not.toHaveBeenCalled();
    call.cancel();
    call.cancel();
    expect(call.cancelled).toBe(true);
    expect(before).toHaveBeenCalledTimes(1);
    const after = vi.fn();
    call.onCancel(after);
    expect(after).toHaveBeenCalledTimes(1);
  });

  it("aborts its signal, whether a handler took it before the cancel or after", () => {
    const early = new CallCancel();
    const signal = early.signal;
    const aborted = vi.fn();
    signal.addEventListener("abort", aborted);
    expect(signal.aborted).toBe(false);
    early.cancel();
    expect(signal.aborted).toBe(true);
    expect(aborted).toHaveBeenCalledTimes(1);
    const late = new CallCancel();
    late.cancel();
    expect(late.signal.aborted).toBe(true);
    expect(late.signal).toBe(late.signal);
  });

  it("is destructured by a handler (`{ onCancel }`) without losing its call", () => {
    const call = new CallCancel();
    const { onCancel } = call;
    const listener = vi.fn();
    onCancel(listener);
    call.cancel();
    expect(listener).toHaveBeenCalledTimes(1);
  });
});
