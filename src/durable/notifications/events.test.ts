import { describe, expect, it } from "vitest";
import type { SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import type { Session } from "@agent-runtime/protocol/sessions";
import { hears, payloadOf, quote } from "./events";
import { pushMessage } from "./deliverer";

const target: SubscriptionTarget = {
  id: "sub-1",
  kind: "webhook",
  url: "https://hooks.example.com/x",
  secret: "s".repeat(16),
  keys: null,
  events: ["permission.requested", "turn.finished"],
  machines: null,
  scope: ["laptop"],
  muted: false,
  expiresAtMs: null,
  baseUrl: "https://runtime.example.com",
};

const session = {
  id: "ses-0123456789abcdef-laptop",
  sessionId: "abc",
  agent: "claude",
  title: "Fix <the> build & ship",
} as Session;

describe("hears", () => {
  it("follows the subscription's events, machines, mute, expiry and its token's scope", () => {
    expect(hears(target, "turn.finished", "laptop", 0)).toBe(true);
    expect(hears(target, "turn.failed", "laptop", 0)).toBe(false);
    expect(hears(target, "turn.finished", "desktop", 0)).toBe(false); // outside the token's scope
    expect(hears({ ...target, scope: "*", machines: ["desktop"] }, "turn.finished", "laptop", 0)).toBe(false);
    expect(hears({ ...target, muted: true }, "turn.finished", "laptop", 0)).toBe(false);
    expect(hears({ ...target, expiresAtMs: 10 }, "turn.finished", "laptop", 11)).toBe(false);
  });
});

describe("payloadOf", () => {
  it("links the session at its question, with a one-line Slack text", () => {
    const payload = payloadOf(
      {
        type: "permission.requested",
        machine: "laptop",
        session,
        permission: {
          requestId: 7,
          kind: "permission",
          title: "Write\nhello.txt",
          toolCallId: null,
          options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }],
          atMs: 0,
        },
      },
      "https://runtime.example.com",
      "evt-1",
      Date.UTC(2026, 10, 23),
    );
    expect(payload).toMatchObject({
      id: "evt-1",
      event: "permission.requested",
      at: "2026-11-23T00:00:00.000Z",
      machine: "laptop",
      agent: "claude",
      session: { id: session.id, sessionId: "abc", title: "Fix <the> build & ship" },
      permission: { requestId: 7, title: "Write\nhello.txt", options: [{ optionId: "allow" }] },
      url: "https://runtime.example.com/sessions/ses-0123456789abcdef-laptop",
    });
    expect(payload.text).toBe(
      `claude on laptop asks: Write hello.txt (“Fix &lt;the&gt; build &amp; ship”) <https://runtime.example.com/sessions/ses-0123456789abcdef-laptop|Answer>`,
    );
    expect(payload.text).not.toContain("\n");
  });

  it("says how a turn ended, and when a machine comes and goes", () => {
    const done = payloadOf(
      {
        type: "turn.finished",
        machine: "laptop",
        session,
        stopReason: "end_turn",
        durationMs: 1200,
        lastLine: "All tests pass.",
        changes: { turn: 2, files: 3, additions: 40, deletions: 2 },
      },
      "https://r",
      "e",
      0,
    );
    expect(done.turn).toEqual({
      stopReason: "end_turn",
      durationMs: 1200,
      lastLine: "All tests pass.",
      changes: { turn: 2, files: 3, additions: 40, deletions: 2 },
      usage: null,
    });
    expect(done.text).toContain("finished");
    expect(done.text).toContain("(3 files, +40 −2)");
    expect(done.text).toContain("All tests pass.");
    const away = payloadOf({ type: "machine.offline", machine: "laptop" }, "https://r", "e", 0);
    expect(away).toMatchObject({ session: null, agent: null, url: "https://r/machines/laptop" });
    expect(away.text).toContain("went offline");
  });
});

describe("quote", () => {
  it("keeps someone else's words from becoming Slack controls, Markdown links or mass mentions", () => {
    const hostile = "<https://evil.example|Click me> <!channel> <@U123> [login](https://evil.example) @everyone @Here";
    const quoted = quote(hostile, 500);
    expect(quoted).not.toMatch(/[<>]/);
    expect(quoted).not.toMatch(/[^\\]\]\(/); // no unescaped "](" left
    expect(quoted).toContain("\\[login\\](https://evil.example)");
    expect(quoted).not.toMatch(/@(everyone|here|channel)/i);
    expect(quoted).toContain("&lt;!channel&gt;");
  });

  it("leaves the session's own link the only control in the text, and the payload's fields as they were", () => {
    const lastLine = "Done <!here> see [the PR](https://evil.example) @channel";
    const done = payloadOf({ type: "turn.finished", machine: "laptop", session, stopReason: "end_turn", durationMs: 5, lastLine }, "https://r", "e", 0);
    expect(done.text.match(/<[^&]/g)).toEqual(["<h"]); // only <https://r/sessions/…|Open>
    expect(done.text.endsWith(`<https://r/sessions/${session.id}|Open>`)).toBe(true);
    expect(done.turn?.lastLine).toBe(lastLine);
  });
});

describe("questions, logins and cost", () => {
  it("says what the agent asks, that it must be logged in and how, and what a turn cost", () => {
    const question = payloadOf(
      {
        type: "elicitation.requested",
        machine: "laptop",
        session,
        question: {
          requestId: 4,
          kind: "elicitation",
          title: "What is your name?",
          toolCallId: null,
          options: [],
          atMs: 0,
          elicitation: { mode: "form", message: "What is your name?", fields: [] },
        },
      },
      "https://r",
      "e",
      0,
    );
    expect(question).toMatchObject({ event: "elicitation.requested", question: { requestId: 4, title: "What is your name?", mode: "form" } });
    expect(question.text).toContain("asks: What is your name?");
    expect(pushMessage(question).title).toContain("needs you");
    const methods = [{ id: "t", type: "terminal" as const, name: "Log in in a terminal" }];
    const login = payloadOf({ type: "agent.login", machine: "laptop", session, methods }, "https://r", "e", 0);
    expect(login).toMatchObject({ event: "agent.login", login: { methods } });
    expect(pushMessage(login).title).toContain("needs a login");
    // The agent's own flow, before any session: the page is in the payload as given, and inert in the text.
    const page = { requestId: "r1", method: "b", atMs: 0, message: "Open it", url: "https://x.test/a?b=<c|d>", elicitationId: "e1" };
    const flow = payloadOf({ type: "agent.login", machine: "laptop", agent: "mock-login", methods, question: page }, "https://r", "e", 0);
    expect(flow).toMatchObject({ agent: "mock-login", session: null, url: "https://r/machines/laptop/agents", login: { methods, question: page } });
    expect(flow.text).toContain("https://x.test/a?b=&lt;c|d&gt;");
    expect(flow.text).not.toContain("<c|d>");
    expect(pushMessage(flow).title).toBe("mock-login on laptop needs a login");
    const done = payloadOf(
      {
        type: "turn.finished",
        machine: "laptop",
        session,
        stopReason: "end_turn",
        durationMs: 1,
        lastLine: null,
        usage: { inputTokens: 5, outputTokens: 15, cachedTokens: 0, cost: { amount: 0.00002, currency: "USD" } },
      },
      "https://r",
      "e",
      0,
    );
    expect(done.turn?.usage).toMatchObject({ inputTokens: 5 });
    expect(done.text).toContain("($0.00002)");
  });
});
