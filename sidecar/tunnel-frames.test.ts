import { afterEach, describe, expect, it, vi } from "vitest";
import { encodeFrame, parseWorkerFrame, WorkerFrame } from "@agent-runtime/protocol/frames";
import { readWorkerFrame } from "./tunnel-frames";

const message = '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}';
const call = { t: "req", id: "c-1", op: "acp.post", args: { serverId: "s", message, method: "initialize", awaitId: 7 } };

/** Frames the worker sends and frames it must never send: the light path and the schema must agree on all of them. */
const messages: string[] = [
  JSON.stringify(call),
  JSON.stringify({ ...call, id: "x".repeat(256) }),
  JSON.stringify({ ...call, extra: true }),
  JSON.stringify({ t: "req", id: "c-2", op: "acp.list" }),
  JSON.stringify({ args: call.args, op: call.op, id: call.id, t: "req" }),
  JSON.stringify({ ...call, id: "" }),
  JSON.stringify({ ...call, id: "x".repeat(257) }),
  JSON.stringify({ ...call, id: 7 }),
  JSON.stringify({ ...call, op: "fs.nonsense" }),
  JSON.stringify({ ...call, op: "toString" }),
  JSON.stringify({ ...call, op: null }),
  JSON.stringify([call]),
  JSON.stringify({ t: "cancel", id: "c-1" }),
  JSON.stringify({ t: "sub", sub: "s1", stream: { kind: "acp", serverId: "s" }, after: 0, packed: true }),
  JSON.stringify({ t: "welcome", machine: "m" }),
  JSON.stringify({ t: "bye" }),
  "null",
  "7",
  '"req"',
  '{"t":"req",',
  "",
];

describe("readWorkerFrame: the worker's frames, a call's without walking the union of frames", () => {
  afterEach(() => vi.restoreAllMocks());

  it.each(messages)("reads %s as the schema does", (text) => {
    expect(readWorkerFrame(text)).toEqual(parseWorkerFrame(text));
  });

  it("reads a binary call (a file's piece) as the schema does", () => {
    const piece = encodeFrame({ t: "req", id: "u-1", op: "fs.upload", args: { uploadId: "u", index: 0, bytes: new Uint8Array([1, 2, 3]) } });
    expect(piece).toBeInstanceOf(Uint8Array);
    expect(readWorkerFrame(piece)).toEqual(parseWorkerFrame(piece));
  });

  it("checks a call without the frames' schema, and anything else with it", () => {
    const schema = vi.spyOn(WorkerFrame, "safeParse");
    expect(readWorkerFrame(JSON.stringify(call))).toEqual({ ok: true, frame: call });
    expect(schema).not.toHaveBeenCalled();
    // A call the light check refuses goes to the schema, which names what is wrong.
    const refused = readWorkerFrame(JSON.stringify({ ...call, op: "fs.nonsense" }));
    expect(refused.ok).toBe(false);
    expect(refused.ok ? "" : refused.error).toContain("op");
    expect(schema).toHaveBeenCalledTimes(1);
    readWorkerFrame(JSON.stringify({ t: "cancel", id: "c-1" }));
    expect(schema).toHaveBeenCalledTimes(2);
  });
});
