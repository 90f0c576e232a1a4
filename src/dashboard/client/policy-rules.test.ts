import { describe, expect, it } from "vitest";
import { decisionText, formOf, matchText, moved, ruleFromForm, verdictText } from "./policy-rules";

describe("a rule's form", () => {
  it("turns the fields a person filled into a rule, and a rule back into them", () => {
    const form = {
      ...formOf(null),
      name: " no rm ",
      decision: "ask" as const,
      timeoutSeconds: "300",
      onTimeout: "deny" as const,
      kinds: ["execute" as const],
      commands: "rm *\n\n  git push --force* ",
      agents: "claude, codex",
      outsideFolder: "outside" as const,
    };
    const rule = ruleFromForm(form);
    expect(rule).toEqual({
      name: "no rm",
      decision: "ask",
      ask: { timeoutSeconds: 300, onTimeout: "deny" },
      match: { kinds: ["execute"], commands: ["rm *", "git push --force*"], agents: ["claude", "codex"], outsideFolder: true },
    });
    expect(ruleFromForm(formOf(rule))).toEqual(rule);
    // A deadline belongs to an ask only; empty fields match anything.
    expect(ruleFromForm({ ...formOf(null), decision: "allow", timeoutSeconds: "60" })).toEqual({ match: {}, decision: "allow" });
  });

  it("says a rule and a verdict in words", () => {
    const rule = { match: { kinds: ["read" as const], paths: ["src/**"], outsideFolder: false }, decision: "allow" as const };
    expect(matchText(rule)).toBe("read · paths src/** · inside the folder");
    expect(matchText({ match: {}, decision: "deny" })).toBe("every request");
    expect(decisionText({ match: {}, decision: "ask", ask: { timeoutSeconds: 60, onTimeout: "allow" } })).toBe("ask (allow after 60 s)");
    expect(verdictText({ decision: "ask", rule: null, ruleName: null, source: "team", ask: null })).toBe("ask: no rule matches, so a person is asked");
    expect(verdictText({ decision: "deny", rule: 0, ruleName: "no rm", source: "session", ask: null })).toBe("deny by no rm of the session's policy");
  });

  it("moves a rule up or down, never past an end", () => {
    expect(moved(["a", "b", "c"], 2, -1)).toEqual(["a", "c", "b"]);
    expect(moved(["a", "b"], 0, -1)).toEqual(["a", "b"]);
  });
});
