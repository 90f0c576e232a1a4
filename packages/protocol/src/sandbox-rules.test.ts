import { describe, expect, it } from "vitest";
import { PermissionPolicy, PolicyTest, TeamPolicy } from "./policy";
import { agentModelHosts, decideSandbox, defaultSandbox, SandboxRule } from "./sandbox-rules";

const rules = (r: unknown[]) => TeamPolicy.parse({ rules: [], sandbox: r }).sandbox;

describe("decideSandbox", () => {
  it("lets the first matching rule decide, by agent, machine and origin", () => {
    const sandbox = rules([
      { name: "triggers", match: { origins: ["trigger"] }, profile: "workspace", network: { mode: "allowlist", allow: ["github.com"] } },
      { match: { agents: ["codex"], machines: ["ci"] }, profile: "read-only", network: { mode: "none" } },
      { match: {}, profile: "workspace", network: { mode: "open" }, denyRead: ["~/secrets"] },
    ]);
    const trigger = decideSandbox(sandbox, { agent: "claude", machine: "laptop", origin: "trigger" });
    expect(trigger).toEqual({
      origin: "trigger",
      requested: { profile: "workspace", network: { mode: "allowlist", allow: ["github.com", "api.anthropic.com"] }, denyRead: [] },
      rule: 0,
      ruleName: "triggers",
    });
    const codex = decideSandbox(sandbox, { agent: "codex", machine: "ci", origin: "session" });
    expect([codex.rule, codex.ruleName, codex.requested.profile, codex.requested.network]).toEqual([
      1,
      "sandbox rule 2",
      "read-only",
      { mode: "none", allow: [] },
    ]);
    const other = decideSandbox(sandbox, { agent: "codex", machine: "laptop", origin: "task" });
    expect([other.rule, other.requested]).toEqual([2, { profile: "workspace", network: { mode: "open", allow: [] }, denyRead: ["~/secrets"] }]);
  });

  it("adds the agent's model hosts to an allowlist unless the rule says not to", () => {
    const [own] = rules([{ profile: "workspace", network: { mode: "allowlist", allow: ["127.0.0.1:18555"] }, agentHosts: false }])!;
    expect(decideSandbox([own!], { agent: "claude", machine: "m", origin: "task" }).requested.network.allow).toEqual(["127.0.0.1:18555"]);
    expect(agentModelHosts("codex-acp")).toEqual(agentModelHosts("codex"));
    expect(agentModelHosts("mock")).toEqual([]);
  });

  it("defaults: unattended work is never full; a person's session keeps full, said as such", () => {
    for (const origin of ["task", "schedule", "trigger"] as const) {
      const verdict = decideSandbox(undefined, { agent: "claude", machine: "m", origin });
      expect(verdict.rule).toBeNull();
      expect(verdict.requested).toEqual({
        profile: "workspace",
        network: { mode: "allowlist", allow: ["api.anthropic.com", "registry.npmjs.org", "github.com"] },
        denyRead: [],
      });
    }
    expect(decideSandbox([], { agent: "claude", machine: "m", origin: "session" }).requested).toEqual(defaultSandbox("claude", "session"));
    expect(defaultSandbox("claude", "session").profile).toBe("full");
  });
});

describe("TeamPolicy", () => {
  it("reads a policy stored before sandbox rules existed", () => {
    const stored = { rules: [{ match: { kinds: ["execute"] }, decision: "ask" }] };
    const parsed = TeamPolicy.parse(stored);
    expect(parsed.sandbox).toBeUndefined();
    expect(decideSandbox(parsed.sandbox, { agent: "mock", machine: "m", origin: "schedule" }).requested.profile).toBe("workspace");
  });

  it("refuses what a rule cannot mean, and a sandbox in a session's own policy", () => {
    expect(SandboxRule.safeParse({ profile: "full", network: { mode: "open", allow: ["x.com"] } }).success).toBe(false);
    expect(SandboxRule.safeParse({ profile: "sideways", network: { mode: "open" } }).success).toBe(false);
    expect(SandboxRule.safeParse({ match: { origins: ["cron"] }, profile: "full", network: { mode: "open" } }).success).toBe(false);
    expect(PermissionPolicy.safeParse({ rules: [], sandbox: [] }).success).toBe(false);
  });

  it("the tester's request defaults its origin to a person's session and takes a draft with sandbox rules", () => {
    const test = PolicyTest.parse({
      request: { agent: "mock", machine: "m", cwd: "/w" },
      policy: { rules: [], sandbox: [{ profile: "read-only", network: { mode: "none" } }] },
    });
    expect(test.request.origin).toBe("session");
    expect(test.policy?.sandbox?.[0]?.profile).toBe("read-only");
  });
});
