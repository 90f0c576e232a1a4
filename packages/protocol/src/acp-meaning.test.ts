import { describe, expect, it } from "vitest";
import {
  agentCapabilitiesOf,
  answerOf,
  elicitationAnswerOf,
  exitDescription,
  pendingRequestOf,
  permissionAnswerOf,
  promptText,
  stopReasonOf,
} from "./acp-meaning";

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

describe("elicitation", () => {
  it("keeps a form's fields and a URL's link, and an answer's action and field names (never the values)", () => {
    const form = pendingRequestOf(
      "elicitation/create",
      7,
      {
        sessionId: "s",
        mode: "form",
        message: "Who?",
        requestedSchema: {
          type: "object",
          properties: { name: { type: "string", title: "Name" }, size: { type: "string", enum: ["s", "m"] }, odd: "nonsense" },
          required: ["name"],
        },
      },
      5,
    );
    expect(form).toMatchObject({ kind: "elicitation", title: "Who?", requestId: 7 });
    expect(form.elicitation).toEqual({
      mode: "form",
      message: "Who?",
      fields: [
        { name: "name", type: "string", title: "Name", description: null, required: true, options: null },
        { name: "size", type: "string", title: null, description: null, required: false, options: ["s", "m"] },
      ],
    });
    const link = pendingRequestOf("elicitation/create", 8, { sessionId: "s", mode: "url", message: "Open", url: "https://x.test/a", elicitationId: "e1" }, 5);
    expect(link.elicitation).toEqual({ mode: "url", message: "Open", url: "https://x.test/a", elicitationId: "e1" });
    expect(elicitationAnswerOf(form, { result: { action: "accept", content: { name: "secret" } } })).toEqual({
      requestId: 7,
      action: "accept",
      fields: ["name"],
    });
    expect(elicitationAnswerOf(form, { error: { code: 1 } }).action).toBe("error");
  });
});
