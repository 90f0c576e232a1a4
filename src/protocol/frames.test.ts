import { describe, expect, it } from "vitest";
import { OPS, parseOpArgs, parseOpResult, parseSidecarFrame, parseWorkerFrame } from "./frames";

describe("tunnel frames", () => {
  it("parse every kind a sidecar sends", () => {
    for (const frame of [
      { t: "hello", protocol: 1, machine: "m", sidecarVersion: "0.1.0", platform: "linux", heartbeatMs: 20000, bootId: "b" },
      { t: "res", id: "x-1", ok: true, value: { anything: 1 } },
      { t: "err", id: "x-1", problem: { code: "not_found", detail: "no" } },
      { t: "ev", sub: "s", events: [[1, "{}"]], gap: { from: 1, to: 2, tooLarge: true } },
      { t: "end", sub: "s", end: { code: "exited", json: "{}" } },
      { t: "bad", error: "what" },
    ]) {
      expect(parseSidecarFrame(JSON.stringify(frame)), frame.t).toEqual({ ok: true, frame });
    }
  });

  it("refuse what is not a frame, naming why", () => {
    expect(parseSidecarFrame("{nope")).toEqual({ ok: false, error: expect.stringContaining("not JSON") });
    expect(parseSidecarFrame('{"t":"beat"}')).toMatchObject({ ok: false, error: expect.stringContaining('"beat"') });
    expect(parseSidecarFrame('{"t":"err","id":"x","problem":{"code":"made_up","detail":"d"}}')).toMatchObject({ ok: false });
    expect(parseSidecarFrame('{"t":"ev","sub":"s","events":[["1","x"]]}')).toMatchObject({ ok: false, error: expect.stringContaining("events.0.0") });
    expect(parseWorkerFrame('{"t":"req","id":"1","op":"rm -rf","args":{}}')).toMatchObject({ ok: false, error: expect.stringContaining("op") });
    expect(parseWorkerFrame('{"t":"sub","sub":"s","stream":{"kind":"acp"},"after":0}')).toMatchObject({ ok: false });
    expect(parseWorkerFrame("null")).toMatchObject({ ok: false });
  });

  it("have a schema for the arguments and the result of every operation", () => {
    for (const [op, { args, result }] of Object.entries(OPS)) {
      expect(typeof args.safeParse, op).toBe("function");
      expect(typeof result.safeParse, op).toBe("function");
    }
    expect(parseOpArgs("processes.signal", { id: "p", signal: "SIGHUP" })).toMatchObject({ ok: false, error: expect.stringContaining("signal") });
    expect(parseOpArgs("processes.spawn", { command: "ls", args: ["a\u0000"] })).toMatchObject({ ok: false });
    expect(parseOpArgs("acp.list", {})).toEqual({ ok: true, args: {} });
    expect(parseOpResult("acp.post", { status: 200, body: "{}" })).toEqual({ ok: true, value: { status: 200, body: "{}" } });
    expect(parseOpResult("acp.post", { status: 500 })).toMatchObject({ ok: false });
  });
});
