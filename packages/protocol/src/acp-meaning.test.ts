import { describe, expect, it } from "vitest";
import { agentCapabilitiesOf, answerOf, exitDescription, pendingRequestOf, permissionAnswerOf, promptText, stopReasonOf } from "./acp-meaning";

describe("agentCapabilitiesOf", () => {
  it("reads resume, load, list, close and the version from an answer to initialize", () => {
    const caps = agentCapabilitiesOf({
      protocolVersion: 1,
      agentCapabilities: { loadSession: true, sessionCapabilities: { resume: {}, close: {} } },
      agentInfo: { name: "mock", version: "1.2.3" },
    });
    expect(caps).toEqual({ resume: true, load: true, list: false, close: true, delete: false, version: "1.2.3" });
  });

  it("reads an answer it cannot parse as an agent that can do none of it", () => {
    expect(agentCapabilitiesOf({ agentCapabilities: "nonsense" })).toEqual({
      resume: false,
      load: false,
      list: false,
      close: false,
      delete: false,
      version: null,
    });
    expect(agentCapabilitiesOf(null).load).toBe(false);
    expect(agentCapabilitiesOf({ agentCapabilities: { sessionCapabilities: null } }).resume).toBe(false);
  });
});

describe("messages", () => {
  it("reads a prompt's text, an answer's result or error, and a turn's stop reason", () => {
    expect(promptText([{ type: "text", text: "fix " }, { type: "resource_link", uri: "file:///a.ts" }, { type: "image", data: "x" }, 7])).toBe(
      "fix file:///a.ts",
    );
    expect(promptText("not blocks")).toBe("");
    expect(answerOf('{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}')).toEqual({ result: { stopReason: "end_turn" } });
    expect(answerOf('{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}')).toEqual({ error: "no" });
    expect(answerOf('{"jsonrpc":"2.0","id":1,"error":"plain"}')).toEqual({ error: '"plain"' });
    expect(answerOf("{")).toEqual({ error: "the agent's answer was not JSON" });
    expect(stopReasonOf({ stopReason: "cancelled" })).toBe("cancelled");
    expect(stopReasonOf({})).toBeNull();
  });

  it("reads a waiting request and how it was answered", () => {
    const pending = pendingRequestOf(
      "session/request_permission",
      7,
      { sessionId: "s", toolCall: { toolCallId: "t1", title: "Write a.txt" }, options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }, { bad: 1 }] },
      5,
    );
    expect(pending).toEqual({
      requestId: 7,
      kind: "permission",
      title: "Write a.txt",
      toolCallId: "t1",
      options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }],
      atMs: 5,
    });
    expect(pendingRequestOf("elicitation/create", "q", { message: "Which branch?" }, 0)).toMatchObject({ kind: "elicitation", title: "Which branch?" });
    expect(permissionAnswerOf(pending, { result: { outcome: { outcome: "selected", optionId: "allow" } } })).toEqual({
      requestId: 7,
      outcome: "selected",
      optionId: "allow",
      name: "Allow",
    });
    expect(permissionAnswerOf(pending, { error: { code: 1 } })).toMatchObject({ outcome: "error", optionId: null });
  });

  it("says how a process ended", () => {
    expect(exitDescription('{"exitCode":1}')).toBe("code 1");
    expect(exitDescription('{"exitCode":null,"signal":"SIGKILL"}')).toBe("SIGKILL");
    expect(exitDescription("{}")).toBeNull();
    expect(exitDescription("nope")).toBeNull();
  });
});
