import { describe, expect, it } from "vitest";
import { encodeFrame, FRAME_HEADROOM, packEvents, parseSidecarFrame, parseWorkerFrame, type StreamEvent, withBodyHeadroom, withHeadroom } from "./frames";
import { OPS, parseOpArgs, parseOpResult } from "./ops";

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

  it("carry a packed batch of events as their texts, one binary frame, and give the events back as they were", () => {
    const events: StreamEvent[] = [
      [7, '{"jsonrpc":"2.0","method":"session/update","params":{"text":"a \\"quoted\\" line\\n"}}'],
      [8, JSON.stringify({ text: "héllo, 世界 🙂" })],
      [9, "{}"],
    ];
    const wire = encodeFrame(packEvents("s", events, { from: 3, to: 6 }));
    if (typeof wire === "string") throw new Error("a packed batch must be a binary frame");
    // The texts are the payload as they are: nothing escaped into the control frame's JSON.
    expect(new TextDecoder().decode(wire)).toContain(events[0]![1]);
    expect(parseSidecarFrame(wire)).toEqual({ ok: true, frame: { t: "ev", sub: "s", events, gap: { from: 3, to: 6 } } });
    // Lengths that do not add up to the bytes sent are refused, not read past or short.
    const packed = packEvents("s", events);
    const lying = encodeFrame({ ...packed, pieces: [[7, 1]] });
    expect(parseSidecarFrame(lying)).toMatchObject({ ok: false, error: expect.stringContaining("do not add up") });
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

  it("carry bytes in one binary frame, beside their control frame, and give them back where they were", () => {
    const bytes = new Uint8Array([0, 255, 10, 13, 34, 92]);
    const upload = { t: "req" as const, id: "x-2", op: "fs.upload" as const, args: { upload: "abcdefgh", offset: 0, bytes } };
    const sent = encodeFrame(upload);
    expect(sent).toBeInstanceOf(Uint8Array);
    // The control frame's JSON has no trace of the bytes: they follow it as they are.
    expect(new TextDecoder().decode(sent as Uint8Array)).not.toContain("bytes");
    const back = parseWorkerFrame(sent);
    expect(back).toEqual({ ok: true, frame: upload });
    expect(parseOpArgs("fs.upload", (back as { frame: { args: unknown } }).frame.args)).toEqual({ ok: true, args: upload.args });
    // An ArrayBuffer (what workerd hands over) reads the same, and so does an answer with bytes.
    const piece = { t: "res" as const, id: "x-3", ok: true as const, value: { path: "/f", size: 6, mtimeMs: 1, bytes } };
    const answer = encodeFrame(piece) as Uint8Array;
    const parsed = parseSidecarFrame(answer.buffer.slice(answer.byteOffset, answer.byteOffset + answer.length) as ArrayBuffer);
    expect(parsed).toEqual({ ok: true, frame: piece });
    // Bytes that turn themselves into JSON (a Node Buffer, what the sidecar reads a file into) are carried as they are.
    class NodeLikeBuffer extends Uint8Array {
      toJSON() {
        return { type: "Buffer", data: [...this] };
      }
    }
    const fromNode = encodeFrame({ ...piece, value: { ...piece.value, bytes: NodeLikeBuffer.from(bytes) } }) as Uint8Array;
    expect(fromNode.length).toBe(answer.length);
    expect(parseOpResult("fs.read", (parsed as { frame: { value: unknown } }).frame.value)).toMatchObject({ ok: true });
    // A frame without bytes stays JSON text; bytes cannot be smuggled in as JSON.
    expect(encodeFrame({ t: "unsub", sub: "s" })).toBe('{"t":"unsub","sub":"s"}');
    expect(parseOpArgs("fs.upload", { upload: "abcdefgh", offset: 0, bytes: { 0: 1 } })).toMatchObject({ ok: false });
  });

  it("write the header before bytes that have room for it, the same frame as a copy, and touch nothing else of their buffer", () => {
    const call = (bytes: Uint8Array) => ({
      t: "req" as const,
      id: "x-9",
      op: "fs.commit" as const,
      args: { upload: "abcdefgh", offset: 0, path: "/é/f", bytes },
    });
    const copied = encodeFrame(call(new Uint8Array([1, 2, 3, 250]))) as Uint8Array;
    const buffer = new Uint8Array(200).fill(7);
    buffer.set([1, 2, 3, 250], 150);
    buffer.fill(9, 154);
    const inPlace = encodeFrame(call(withHeadroom(buffer.subarray(150, 154)))) as Uint8Array;
    expect(inPlace.buffer).toBe(buffer.buffer); // no copy: the bytes were sent where they are
    expect(inPlace).toEqual(copied);
    const start = 154 - copied.length;
    expect([...buffer.subarray(0, start)].every((b) => b === 7)).toBe(true);
    expect([...buffer.subarray(154)].every((b) => b === 9)).toBe(true);
    expect(parseWorkerFrame(inPlace)).toEqual({ ok: true, frame: call(new Uint8Array([1, 2, 3, 250])) });
    // Without room enough, or without the buffer's owner saying its memory before them is free: copied, the buffer untouched.
    const short = withHeadroom(new Uint8Array(20).subarray(10, 14));
    expect((encodeFrame(call(short)) as Uint8Array).buffer).not.toBe(short.buffer);
    const other = new Uint8Array(200).fill(7);
    const notOffered = encodeFrame(call(other.subarray(150, 154))) as Uint8Array;
    expect(notOffered.buffer).not.toBe(other.buffer);
    expect([...other.subarray(0, 150)].every((b) => b === 7)).toBe(true);
  });

  it("mark only a body read after FRAME_HEADROOM free bytes, with nothing after it, as having room (withBodyHeadroom)", () => {
    const frameOf = (bytes: Uint8Array) =>
      encodeFrame({ t: "req", id: "x-1", op: "fs.commit", args: { upload: "u", offset: 0, path: "/f", bytes } }) as Uint8Array;
    const read = new Uint8Array(new ArrayBuffer(FRAME_HEADROOM + 4), FRAME_HEADROOM, 4);
    expect(frameOf(withBodyHeadroom(read)).buffer).toBe(read.buffer);
    // A view of a larger buffer (bytes after it), or at another offset: someone else's memory, copied.
    for (const view of [
      new Uint8Array(new ArrayBuffer(FRAME_HEADROOM + 8), FRAME_HEADROOM, 4),
      new Uint8Array(new ArrayBuffer(FRAME_HEADROOM + 4), FRAME_HEADROOM - 4, 4),
    ]) {
      expect(frameOf(withBodyHeadroom(view)).buffer).not.toBe(view.buffer);
    }
  });

  it("carry a terminal's output as one binary frame of pieces, whose lengths must add up to its bytes", () => {
    const bytes = new TextEncoder().encode("ab\u001b[0mc");
    const out = {
      t: "out" as const,
      sub: "term-1",
      pieces: [
        [4, 2],
        [5, bytes.length - 2],
      ] as [number, number][],
      bytes,
    };
    const sent = encodeFrame(out);
    expect(sent).toBeInstanceOf(Uint8Array);
    expect(parseSidecarFrame(sent)).toEqual({ ok: true, frame: out });
    const short = encodeFrame({ ...out, pieces: [[4, 2]] });
    expect(parseSidecarFrame(short)).toMatchObject({ ok: false, error: expect.stringContaining("do not add up") });
    // As JSON text it has no bytes: refused.
    expect(parseSidecarFrame(JSON.stringify({ t: "out", sub: "s", pieces: [] }))).toMatchObject({ ok: false });
  });
});
