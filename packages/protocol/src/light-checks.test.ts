/**
 * The hand-written checks in front of zod on the relay's path (the JSON-RPC message, a call's answer
 * frame, `acp.post`'s answer) against their schemas, on tables of good and bad inputs: what a light check
 * accepts, the schema accepts, and gives back the same value, key for key and in the same order (the
 * message goes to the agent as its JSON); the common shapes are taken by the light check (or it would
 * save nothing); and whatever it leaves goes to the schema, as before.
 */
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { commonJsonRpcMessage, JsonRpcMessage, readJsonRpcMessage } from "./acp";
import { commonAnswerFrame, parseSidecarFrame, SidecarFrame } from "./frames";
import { AcpPostAnswer, commonAcpPostAnswer } from "./ops/acp";

/** `light` and `schema` agree on `value`; `taken`: whether the light check takes it (else the schema decides). */
function agree(light: (value: unknown) => unknown, schema: z.ZodType, value: unknown, taken: boolean): void {
  const fast = light(value);
  const full = schema.safeParse(value);
  const what = JSON.stringify(value) ?? String(value);
  expect(fast !== null, `light check on ${what}`).toBe(taken);
  if (fast === null) return;
  expect(full.success, `the schema on ${what}, which the light check took`).toBe(true);
  expect(fast, what).toStrictEqual(full.data);
  expect(Object.keys(fast as object), what).toEqual(Object.keys(full.data as object));
  expect(JSON.stringify(fast), what).toBe(JSON.stringify(full.data));
}

const long = (n: number) => "x".repeat(n);

describe("the JSON-RPC message: commonJsonRpcMessage against JsonRpcMessage", () => {
  const table: [value: unknown, taken: boolean][] = [
    [{ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, true],
    [{ jsonrpc: "2.0", id: "a", method: "session/prompt", params: { sessionId: "s", prompt: [] } }, true],
    [{ jsonrpc: "2.0", id: null, method: "x" }, true],
    [{ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } }, true],
    [{ jsonrpc: "2.0", id: 3, result: { outcome: "selected" } }, true],
    [{ jsonrpc: "2.0", id: 3, result: null }, true],
    [{ jsonrpc: "2.0", id: "r", error: { code: -32000, message: "no" } }, true],
    [{ jsonrpc: "2.0", id: 1.5, method: "m", params: [1, 2] }, true],
    // Left to the schema (it accepts them, with keys of its own order or its own: the light check gives way)
    [{ method: "initialize", jsonrpc: "2.0", id: 1 }, false],
    [{ jsonrpc: "2.0", id: 1, method: "m", extra: true }, false],
    [{ jsonrpc: "2.0", id: 1, params: {}, method: "m" }, false],
    [{ jsonrpc: "2.0", id: 1, method: "m", params: undefined }, false],
    // Refused by both
    [{ jsonrpc: "1.0", id: 1, method: "m" }, false],
    [{ id: 1, method: "m" }, false],
    [{ jsonrpc: "2.0", id: 1, method: "" }, false],
    [{ jsonrpc: "2.0", id: 1, method: 7 }, false],
    [{ jsonrpc: "2.0", id: true, method: "m" }, false],
    [{ jsonrpc: "2.0", id: {}, method: "m" }, false],
    [{ jsonrpc: "2.0", id: Number.POSITIVE_INFINITY, method: "m" }, false],
    [{ jsonrpc: "2.0", id: 1 }, false],
    [{ jsonrpc: "2.0", id: 1, method: "m", result: 1 }, false],
    [{ jsonrpc: "2.0", id: 1, result: 1, error: {} }, false],
    [{ jsonrpc: "2.0", result: 1 }, false],
    [{ jsonrpc: "2.0", id: null, result: 1 }, false],
    [{ jsonrpc: "2.0", id: 1, result: undefined }, false],
    [[{ jsonrpc: "2.0", id: 1, method: "m" }], false],
    [null, false],
    ["text", false],
    [42, false],
  ];
  it("agree on every message of the table", () => {
    for (const [value, taken] of table) agree(commonJsonRpcMessage, JsonRpcMessage, value, taken);
  });
  it("readJsonRpcMessage answers as before: the schema's 400s, in its words, for what the light check leaves", () => {
    expect(readJsonRpcMessage('{"jsonrpc":"2.0","id":1,"method":"initialize"}')).toEqual({
      ok: true,
      message: { jsonrpc: "2.0", id: 1, method: "initialize" },
    });
    expect(readJsonRpcMessage('{"method":"m","jsonrpc":"2.0","id":1,"x":2}')).toEqual({ ok: true, message: { jsonrpc: "2.0", id: 1, method: "m", x: 2 } });
    expect(readJsonRpcMessage('{"jsonrpc":"1.0","id":1,"method":"m"}')).toMatchObject({
      ok: false,
      problem: { code: "invalid_request", detail: expect.stringMatching(/^json: jsonrpc: /) },
    });
    expect(readJsonRpcMessage('{"jsonrpc":"2.0","id":1}')).toMatchObject({
      ok: false,
      problem: { code: "invalid_request", detail: expect.stringMatching(/^json: method: /) },
    });
    expect(readJsonRpcMessage("{oops")).toEqual({ ok: false, problem: { code: "invalid_request", detail: "Malformed JSON in request body" } });
  });
});

describe("a call's answer frame: commonAnswerFrame against SidecarFrame", () => {
  const table: [value: unknown, taken: boolean][] = [
    [{ t: "res", id: "ab12-3", ok: true, value: { status: 200, body: "{}" } }, true],
    [{ t: "res", id: "x", ok: true, value: null }, true],
    [{ t: "res", id: long(256), ok: true, value: [1] }, true],
    [{ t: "res", id: "x", ok: true, value: "text" }, true],
    // Left to the schema (which accepts them)
    [{ id: "x", t: "res", ok: true, value: 1 }, false],
    [{ t: "res", id: "x", ok: true, value: 1, extra: 2 }, false],
    [{ t: "err", id: "x", problem: { code: "timeout", detail: "late" } }, false],
    [{ t: "end", sub: "s", end: { reason: "exit", code: 0 } }, false],
    // Refused by both
    [{ t: "res", id: "", ok: true, value: 1 }, false],
    [{ t: "res", id: long(257), ok: true, value: 1 }, false],
    [{ t: "res", id: 7, ok: true, value: 1 }, false],
    [{ t: "res", id: "x", ok: false, value: 1 }, false],
    [{ t: "res", id: "x", ok: true }, false],
    [{ t: "res", id: "x", ok: true, value: undefined }, false],
    [{ t: "nope", id: "x", ok: true, value: 1 }, false],
    [[], false],
    [null, false],
  ];
  it("agree on every frame of the table", () => {
    for (const [value, taken] of table) agree(commonAnswerFrame, SidecarFrame, value, taken);
  });
  it("parseSidecarFrame reads an answer as before, and refuses a bad one in the schema's words", () => {
    expect(parseSidecarFrame('{"t":"res","id":"a-1","ok":true,"value":{"status":202}}')).toEqual({
      ok: true,
      frame: { t: "res", id: "a-1", ok: true, value: { status: 202 } },
    });
    expect(parseSidecarFrame('{"t":"res","id":"","ok":true,"value":1}')).toMatchObject({ ok: false, error: expect.stringContaining('frame "res" refused') });
    expect(parseSidecarFrame('{"t":"res","id":"a","ok":true}')).toMatchObject({ ok: false, error: expect.stringContaining("value") });
  });
});

describe("acp.post's answer: commonAcpPostAnswer against AcpPostAnswer", () => {
  const table: [value: unknown, taken: boolean][] = [
    [{ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":{}}', afterSeq: 12 }, true],
    [{ status: 200, body: "", afterSeq: 0 }, true],
    [{ status: 200, body: "x" }, true],
    [{ status: 202 }, true],
    // Left to the schema (which accepts them)
    [{ body: "x", status: 200 }, false],
    [{ status: 200, afterSeq: 1, body: "x" }, false],
    [{ status: 200, body: "x", extra: 1 }, false],
    [{ status: 202, body: "x" }, false],
    [{ status: 404, notRunning: true, detail: "gone" }, false],
    // Refused by both
    [{ status: 200, body: "x", afterSeq: -1 }, false],
    [{ status: 200, body: "x", afterSeq: 1.5 }, false],
    [{ status: 200, body: "x", afterSeq: Number.MAX_SAFE_INTEGER + 2 }, false],
    [{ status: 200, body: "x", afterSeq: "1" }, false],
    [{ status: 200, body: "x", afterSeq: undefined }, false],
    [{ status: 200, body: 1 }, false],
    [{ status: 200 }, false],
    [{ status: 201, body: "x" }, false],
    [{ status: "200", body: "x" }, false],
    [[], false],
    [null, false],
  ];
  it("agree on every answer of the table", () => {
    for (const [value, taken] of table) agree(commonAcpPostAnswer, AcpPostAnswer, value, taken);
  });
});
