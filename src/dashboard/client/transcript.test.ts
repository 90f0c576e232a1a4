import { describe, expect, it } from "vitest";
import type { Session, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { deadlineText, entryText, pageTitle, sessionOrder, turnChangesOf, withEntry } from "./transcript";

const session = (id: string, state: Session["state"], lastActivityMs: number): Session => ({
  id,
  sessionId: id,
  machine: "local",
  agent: "mock",
  agentVersion: null,
  serverId: "s",
  cwd: "/",
  title: null,
  createdBy: "t",
  createdAtMs: 0,
  lastActivityMs,
  state,
  pending: null,
  failure: null,
  resumable: true,
  continuedFrom: null,
  entries: 0,
  worktree: null,
  lastChanges: null,
  sandbox: null,
  queued: [],
});

describe("sessions", () => {
  it("puts the waiting first, then the running, then the rest by last activity; the title counts the waiting", () => {
    const list = [session("a", "idle", 5), session("b", "waiting", 1), session("c", "running", 2), session("d", "idle", 9), session("e", "waiting", 3)];
    expect(list.sort(sessionOrder).map((s) => s.id)).toEqual(["e", "b", "c", "d", "a"]);
    expect(pageTitle(list)).toBe("(2) agent-runtime");
    expect(pageTitle([session("x", "idle", 1)])).toBe("agent-runtime");
  });
});

describe("transcripts", () => {
  const entry = (seq: number, text: string): TranscriptEntry => ({ seq, atMs: 0, kind: "text", text });

  it("keeps entries in sequence and replaces one that grew", () => {
    let list = withEntry([], entry(2, "b"));
    list = withEntry(list, entry(1, "a"));
    list = withEntry(list, entry(3, "c"));
    list = withEntry(list, entry(2, "bb"));
    expect(list.map((e) => e.text)).toEqual(["a", "bb", "c"]);
  });

  it("says what a tool call, a plan, a question, an answer and a stop were", () => {
    expect(entryText({ seq: 1, atMs: 0, kind: "tool_call", data: { title: "Read a.txt", status: "completed" } })).toBe("tool: Read a.txt (completed)");
    expect(entryText({ seq: 1, atMs: 0, kind: "plan", data: { entries: [{ status: "completed", content: "x" }, { content: "y" }] } })).toBe("plan: ✓ x  · y");
    expect(entryText({ seq: 1, atMs: 0, kind: "permission", data: { title: "Write a" } })).toBe("asks: Write a");
    expect(entryText({ seq: 1, atMs: 0, kind: "permission_answer", data: { optionId: "allow" } })).toBe("answered: allow");
    const policy = { decision: "deny", rule: "no rm", source: "team" };
    expect(entryText({ seq: 1, atMs: 0, kind: "permission", data: { title: "Run rm -rf ~", policy } })).toBe("denied by no rm: Run rm -rf ~");
    expect(entryText({ seq: 1, atMs: 0, kind: "permission_answer", data: { name: "Reject", policy } })).toBe("answered for the policy: Reject");
    const own = { decision: "allow", rule: "rule 1", source: "session" };
    expect(entryText({ seq: 1, atMs: 0, kind: "permission", data: { title: "Edit a", policy: own } })).toBe("allowed by the session's rule 1: Edit a");
    const deadline = { atMs: new Date(2026, 0, 1, 14, 5).getTime(), onTimeout: "deny", rule: "r" };
    expect(entryText({ seq: 1, atMs: 0, kind: "permission", data: { title: "Edit b", deadline } })).toMatch(
      /^asks: Edit b \(deny at (14|0?2):05( PM)? unless answered\)$/,
    );
    expect(entryText({ seq: 1, atMs: 0, kind: "stop", data: { stopReason: "end_turn", durationMs: 1234 } })).toBe("Done in 1.2 s");
    expect(entryText({ seq: 1, atMs: 0, kind: "stop", data: { stopReason: "end_turn", durationMs: 20 } })).toBe("Done");
    const changes = { turn: 2, files: 3, additions: 40, deletions: 2 };
    expect(entryText({ seq: 1, atMs: 0, kind: "stop", data: { stopReason: "cancelled", durationMs: 0, changes } })).toBe("Cancelled · 3 files, +40 −2");
    expect(entryText({ seq: 1, atMs: 0, kind: "stop", data: { stopReason: "odd_reason" } })).toBe("Ended (odd_reason)");
    expect(entryText({ seq: 1, atMs: 0, kind: "prompt", text: "hi" })).toBe("hi");
  });

  it("reads what an agent sent by its shape, ignoring what is not of it", () => {
    expect(turnChangesOf({ changes: { turn: 2, files: 1, additions: 3, deletions: 0, extra: "x" } })).toEqual({
      turn: 2,
      files: 1,
      additions: 3,
      deletions: 0,
    });
    expect(turnChangesOf({ changes: { turn: 2, files: 1, additions: 3 } })).toBeNull();
    expect(turnChangesOf({ changes: { turn: 2, files: 1.5, additions: 3, deletions: 0 } })).toBeNull();
    expect(turnChangesOf({ changes: [2, 1, 3, 0] })).toBeNull();
    expect(entryText({ seq: 1, atMs: 0, kind: "plan", data: { entries: ["step", { content: 3 }, { status: "completed", content: "x" }] } })).toBe(
      "plan: ·   ✓ x",
    );
    expect(entryText({ seq: 1, atMs: 0, kind: "permission", data: { title: "Edit a", policy: "deny" } })).toBe("asks: Edit a");
    expect(deadlineText({ atMs: "soon", onTimeout: "deny" })).toBe("");
    expect(deadlineText(null)).toBe("");
  });
});
