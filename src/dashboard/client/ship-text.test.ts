import { describe, expect, it } from "vitest";
import { gitAdvice, inRepository, suggestedMessage } from "./ship-text";

describe("shipping words", () => {
  it("names a session's file as git's status does", () => {
    expect(inRepository("a.js", "/r/sub", "/r")).toBe("sub/a.js");
    expect(inRepository("a.js", "/r", "/r")).toBe("a.js");
    expect(inRepository("a.js", "/r/", "/r")).toBe("a.js");
  });

  it("suggests a message from what changed, counting when the names are too long for a line", () => {
    expect(
      suggestedMessage([
        { path: "notes/todo.md", status: "added" },
        { path: "app.js", status: "modified" },
      ]),
    ).toBe("Add todo.md, change app.js");
    expect(suggestedMessage([])).toBe("");
    const many = Array.from({ length: 12 }, (_, i) => ({ path: `src/module-${i}.ts`, status: "modified" as const }));
    expect(suggestedMessage(many)).toBe("Change 12 files");
  });

  it("says what to do about git's common refusals, and nothing about the rest", () => {
    expect(gitAdvice("git push: ! [rejected] main -> main (fetch first)")).toContain("pull");
    expect(gitAdvice("fatal: 'origin' does not appear to be a git repository")).toContain("git remote add");
    expect(gitAdvice("Author identity unknown *** Please tell me who you are.")).toContain("user.email");
    expect(gitAdvice("something else entirely")).toBeNull();
  });
});
