import { describe, expect, it } from "vitest";
import { TRANSCRIPT_LIMITS } from "@agent-runtime/protocol/sessions";
import { digestOf, effectOf, TranscriptTail } from "./transcript";

const chunk = (text: string, kind = "agent_message_chunk") => effectOf({ sessionUpdate: kind, content: { type: "text", text } });

describe("effectOf", () => {
  it("reads what a transcript keeps and ignores the rest", () => {
    expect(chunk("hi")).toEqual({ type: "chunk", kind: "text", text: "hi" });
    expect(chunk("hmm", "agent_thought_chunk")).toEqual({ type: "chunk", kind: "thought", text: "hmm" });
    expect(
      effectOf({
        sessionUpdate: "tool_call",
        toolCallId: "t1",
        title: "Edit",
        kind: "edit",
        status: "pending",
        locations: [{ path: "/a" }],
        rawInput: "x".repeat(9),
      }),
    ).toEqual({
      type: "tool_call",
      toolCallId: "t1",
      data: { toolCallId: "t1", title: "Edit", kind: "edit", status: "pending", locations: ["/a"] },
    });
    expect(effectOf({ sessionUpdate: "session_info_update", title: " Fix the build " })).toEqual({ type: "title", title: "Fix the build" });
    expect(effectOf({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "replayed" } })).toEqual({ type: "ignore" });
    expect(effectOf({ sessionUpdate: "agent_message_chunk", content: { type: "image", data: "…" } })).toEqual({ type: "ignore" });
    expect(effectOf({ sessionUpdate: "available_commands_update", availableCommands: [] })).toEqual({ type: "ignore" });
    expect(effectOf("not an update")).toEqual({ type: "ignore" });
  });
});

describe("TranscriptTail", () => {
  it("coalesces consecutive chunks of one kind into one entry, and starts another on any other entry", () => {
    const tail = new TranscriptTail(1);
    tail.add("prompt", 1, { text: "hello" });
    for (const piece of ["You ", "said", ": hello"]) tail.apply(chunk(piece), 2);
    tail.apply(chunk("thinking", "agent_thought_chunk"), 3);
    tail.apply(chunk("more"), 4);
    const saved = tail.takeUnsaved();
    expect(saved.map((e) => [e.seq, e.kind, e.text])).toEqual([
      [1, "prompt", "hello"],
      [2, "text", "You said: hello"],
      [3, "thought", "thinking"],
      [4, "text", "more"],
    ]);
    expect(tail.takeUnsaved()).toEqual([]);
    tail.apply(chunk(" and more"), 5);
    // The open entry grew: it is unsaved again under the same seq.
    expect(tail.takeUnsaved().map((e) => [e.seq, e.text])).toEqual([[4, "more and more"]]);
    expect(tail.next).toBe(5);
  });

  it("keeps the agent's message ids on its entries, and starts a new entry for a new message", () => {
    const tail = new TranscriptTail(1);
    const chunk = (text: string, messageId?: string) =>
      effectOf({ sessionUpdate: "agent_message_chunk", content: { type: "text", text }, ...(messageId ? { messageId } : {}) });
    tail.apply(chunk("Hel", "m1"), 1);
    tail.apply(chunk("lo", "m1"), 2);
    tail.apply(chunk("Next", "m2"), 3);
    expect(tail.takeUnsaved()).toEqual([
      { seq: 1, atMs: 1, kind: "text", text: "Hello", data: { messageId: "m1" } },
      { seq: 2, atMs: 3, kind: "text", text: "Next", data: { messageId: "m2" } },
    ]);
  });

  it("starts a new entry when one would pass the entry bound", () => {
    const tail = new TranscriptTail(1);
    const big = "x".repeat(TRANSCRIPT_LIMITS.maxEntryChars - 1);
    tail.apply(chunk(big), 1);
    tail.apply(chunk("yy"), 1);
    expect(tail.takeUnsaved().map((e) => e.text?.length)).toEqual([big.length, 2]);
  });

  it("updates a tool call in place, and a plan replaces the plan just before it", () => {
    const tail = new TranscriptTail(10);
    tail.apply(effectOf({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run tests", status: "pending" }), 1);
    tail.apply(effectOf({ sessionUpdate: "plan", entries: [{ content: "a", status: "pending" }] }), 2);
    tail.apply(effectOf({ sessionUpdate: "plan", entries: [{ content: "a", status: "completed" }] }), 3);
    tail.apply(effectOf({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" }), 4);
    tail.apply(effectOf({ sessionUpdate: "tool_call_update", toolCallId: "unknown", status: "failed" }), 5);
    expect(tail.takeUnsaved().map((e) => [e.seq, e.kind, e.data])).toEqual([
      [10, "tool_call", { toolCallId: "t1", title: "Run tests", status: "completed" }],
      [11, "plan", { entries: [{ content: "a", status: "completed" }] }],
      [12, "tool_call", { toolCallId: "unknown", status: "failed" }],
    ]);
  });

  it("keeps changes for live delivery only while someone follows, as copies", () => {
    const tail = new TranscriptTail(1);
    tail.apply(chunk("unseen"), 1);
    expect(tail.takeUnsent()).toEqual([]);
    tail.following = true;
    tail.apply(chunk(" seen"), 2);
    const sent = tail.takeUnsent();
    expect(sent.map((e) => e.text)).toEqual(["unseen seen"]);
    tail.apply(chunk("!"), 3);
    expect(sent[0]!.text).toBe("unseen seen"); // what was sent does not change under the reader
    expect(tail.takeUnsent().map((e) => e.text)).toEqual(["unseen seen!"]);
  });
});

describe("digestOf", () => {
  it("keeps the newest prompts and answers that fit, oldest first", () => {
    const entries = [
      { seq: 1, atMs: 0, kind: "prompt" as const, text: "old question" },
      { seq: 2, atMs: 0, kind: "text" as const, text: "old answer" },
      { seq: 3, atMs: 0, kind: "tool_call" as const, data: { title: "x" } },
      { seq: 4, atMs: 0, kind: "prompt" as const, text: "new\nquestion" },
      { seq: 5, atMs: 0, kind: "text" as const, text: "new answer" },
    ];
    const all = digestOf("Title", entries, 10_000);
    expect(all).toContain('("Title")');
    expect(all).toContain("User: old question\nAgent: old answer\nUser: new question\nAgent: new answer\n---\n");
    const short = digestOf(null, entries, 120);
    expect(short.length).toBeLessThanOrEqual(130);
    expect(short).toContain("Agent: new answer");
    expect(short).not.toContain("old question");
  });
});
