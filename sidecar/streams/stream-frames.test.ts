import { describe, expect, it } from "vitest";
import type { PreviewFrame } from "@agent-runtime/protocol/preview";
import { routeStreamFrame } from "./stream-frames";

/** A hub and a preview proxy that record what they are handed. */
function recorders() {
  const hub: unknown[][] = [];
  const previews: PreviewFrame[] = [];
  return {
    hub,
    previews,
    stub: {
      subscribe: (...args: unknown[]) => void hub.push(["subscribe", ...args]),
      unsubscribe: (sub: string) => void hub.push(["unsubscribe", sub]),
    },
    proxy: { frame: (frame: PreviewFrame) => void previews.push(frame) },
  };
}

describe("routeStreamFrame", () => {
  it("hands sub and unsub to the hub, with the subscription's options, and preview frames to the proxy", () => {
    const r = recorders();
    const sub = { t: "sub", sub: "s1", stream: { kind: "logs", processId: "p1" }, after: 3, output: "bytes", packed: true } as const;
    expect(routeStreamFrame(sub, r.stub, r.proxy)).toBe(true);
    expect(routeStreamFrame({ t: "unsub", sub: "s1" }, r.stub, r.proxy)).toBe(true);
    expect(r.hub).toEqual([
      ["subscribe", "s1", { kind: "logs", processId: "p1" }, 3, { recorder: false, output: "bytes", packed: true, shared: false }],
      ["unsubscribe", "s1"],
    ]);
    const close = { t: "px", sid: "v1", code: 1000 } as const;
    expect(routeStreamFrame(close, r.stub, r.proxy)).toBe(true);
    expect(r.previews).toEqual([close]);
    // Without previews a preview frame is still the streams' (dropped), never the caller's.
    expect(routeStreamFrame(close, r.stub, null)).toBe(true);
  });

  it("leaves every other frame to its caller", () => {
    const r = recorders();
    expect(routeStreamFrame({ t: "cancel", id: "c1" }, r.stub, r.proxy)).toBe(false);
    expect(r.hub).toEqual([]);
    expect(r.previews).toEqual([]);
  });
});
