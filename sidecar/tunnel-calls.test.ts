import { describe, expect, it } from "vitest";
import { TunnelCalls } from "./tunnel-calls";
import type { CallCancel } from "./tunnel-cancel";

/** A call whose answer the test gives when it wants, counting how often it was run. */
function heldCall() {
  let release!: (answer: string) => void;
  const held = { runs: 0, cancel: null as CallCancel | null, release: (answer: string) => release(answer) };
  const run = (cancel: CallCancel) => {
    held.runs++;
    held.cancel = cancel;
    return new Promise<string>((resolve) => (release = resolve));
  };
  return { held, run };
}

describe("TunnelCalls: each call the worker sends runs once", () => {
  it("a call sent again while it runs waits for the same run, and once answered gets the same answer without running", async () => {
    const calls = new TunnelCalls();
    const { held, run } = heldCall();
    const first = calls.serve("c1", false, run);
    const again = calls.serve("c1", false, run);
    held.release("answer-1");
    expect(await first).toBe("answer-1");
    expect(await again).toBe("answer-1");
    expect(await calls.serve("c1", false, run)).toBe("answer-1");
    expect(held.runs).toBe(1);
    calls.stop();
  });

  it("a read-only call is not remembered once answered: asked again, it runs again", async () => {
    const calls = new TunnelCalls();
    const { held, run } = heldCall();
    const first = calls.serve("r1", true, run);
    held.release("one");
    expect(await first).toBe("one");
    expect(calls.size).toBe(0);
    const second = calls.serve("r1", true, run);
    held.release("two");
    expect(await second).toBe("two");
    expect(held.runs).toBe(2);
    calls.stop();
  });

  it("a cancelled call stops what it started and is not answered, then or when sent again", async () => {
    const calls = new TunnelCalls();
    const { held, run } = heldCall();
    const first = calls.serve("c2", false, run);
    calls.cancel("c2");
    expect(held.cancel?.cancelled).toBe(true);
    held.release("late");
    expect(await first).toBeNull();
    expect(await calls.serve("c2", false, run)).toBeNull();
    expect(held.runs).toBe(1);
    // Cancelled after its answer: a copy sent again is not answered either.
    const answered = calls.serve("c3", false, run);
    held.release("three");
    expect(await answered).toBe("three");
    calls.cancel("c3");
    expect(await calls.serve("c3", false, run)).toBeNull();
    calls.stop();
  });

  it("forgets an answered call once it is older than the memory, and only then", async () => {
    let now = 1_000;
    const calls = new TunnelCalls(60_000, () => now);
    const { held, run } = heldCall();
    for (const id of ["a", "b"]) {
      const answer = calls.serve(id, false, run);
      held.release(`answer-${id}`);
      await answer;
      now += 30_000;
    }
    // a was answered at 1 000, b at 31 000; it is 61 000 + 1.
    now += 1;
    calls.forgetOld();
    expect(calls.size).toBe(1);
    expect(await calls.serve("b", false, run)).toBe("answer-b");
    const again = calls.serve("a", false, run);
    held.release("a-again");
    expect(await again).toBe("a-again");
    expect(held.runs).toBe(3);
    calls.stop();
  });
});
