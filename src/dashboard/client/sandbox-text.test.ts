import { describe, expect, it } from "vitest";
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import { badgeOf, blockText, sandboxDetail, sandboxFormOf, sandboxRuleFromForm, sandboxRuleText, sandboxVerdictText, specText } from "./sandbox-text";
import { entryClass, entryText } from "./transcript";

const workspace = { profile: "workspace" as const, network: { mode: "allowlist" as const, allow: ["github.com", "api.anthropic.com"] }, denyRead: [] };
const full = { profile: "full" as const, network: { mode: "open" as const, allow: [] }, denyRead: [] };

describe("a session's sandbox in words", () => {
  it("says full plainly, and what the machine enforces before what was asked", () => {
    expect(specText(full)).toBe("full (no sandbox) · open network");
    const asked: SessionSandbox = { origin: "session", requested: full, rule: null, ruleName: null, effective: workspace };
    expect(badgeOf(asked)).toEqual({ text: "workspace · allowlist (2 hosts)", profile: "workspace" });
    expect(sandboxDetail(asked)).toBe(
      "the default for a person's session; the machine enforces workspace · allowlist (2 hosts) (its owner's floor; asked: full (no sandbox) · open network); reaches only github.com, api.anthropic.com",
    );
    const unknownFloor: SessionSandbox = { origin: "trigger", requested: full, rule: 0, ruleName: "gh", effective: null };
    expect(badgeOf(unknownFloor)).toEqual({ text: "full (no sandbox) · open network", profile: "full" });
    expect(sandboxDetail(unknownFloor)).toBe(`asked by the team's rule "gh"; the machine did not say its floor`);
    expect(badgeOf(null).profile).toBe("unknown");
    expect(sandboxVerdictText({ origin: "task", requested: workspace, rule: null, ruleName: null })).toBe(
      "sandbox: workspace · allowlist (2 hosts), the default for a task (github.com, api.anthropic.com)",
    );
  });

  it("says what a block was, as a transcript line of its own style", () => {
    const entry = { seq: 3, atMs: 1, kind: "sandbox" as const, data: { kind: "network", target: "127.0.0.1:9", detail: "not in the allowlist" } };
    expect(blockText(entry)).toBe("blocked by the sandbox: connection to 127.0.0.1:9 (not in the allowlist)");
    expect(entryText(entry)).toBe(blockText(entry));
    expect(entryClass(entry)).toBe("blocked");
    expect(blockText({ ...entry, data: { kind: "read", target: "~/.ssh/id_ed25519" } })).toBe("blocked by the sandbox: read of ~/.ssh/id_ed25519");
  });
});

describe("a sandbox rule's form", () => {
  it("turns the fields into a rule and back; hosts only with an allowlist", () => {
    const form = {
      ...sandboxFormOf(null),
      name: " gh ",
      origins: ["trigger" as const],
      agents: "claude",
      allow: "github.com\n 127.0.0.1:18555 ",
      denyRead: "~/private\n",
    };
    const rule = sandboxRuleFromForm(form);
    expect(rule).toEqual({
      name: "gh",
      match: { agents: ["claude"], origins: ["trigger"] },
      profile: "workspace",
      network: { mode: "allowlist", allow: ["github.com", "127.0.0.1:18555"] },
      agentHosts: true,
      denyRead: ["~/private"],
    });
    expect(sandboxRuleFromForm(sandboxFormOf(rule))).toEqual(rule);
    expect(sandboxRuleText(rule)).toBe("workspace · allowlist (2 hosts): github.com, 127.0.0.1:18555, the agent's model API · never reads ~/private");
    expect(sandboxRuleFromForm({ ...form, network: "open" }).network).toEqual({ mode: "open", allow: [] });
  });
});
