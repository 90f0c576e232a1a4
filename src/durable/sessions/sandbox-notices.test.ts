import { describe, expect, it } from "vitest";
import { SandboxNotices } from "./sandbox-notices";

describe("sandbox notices", () => {
  it("tells one refusal of a session per quiet period, each session on its own", () => {
    const notices = new SandboxNotices(60_000);
    expect(notices.mayTell("a", 0)).toBe(true);
    expect(notices.mayTell("a", 59_999)).toBe(false);
    expect(notices.mayTell("b", 59_999)).toBe(true);
    expect(notices.mayTell("a", 60_000)).toBe(true);
    expect(notices.mayTell("a", 60_001)).toBe(false);
  });
});
