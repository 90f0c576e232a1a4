import { describe, expect, it } from "vitest";
import type { RegistryAgent } from "@agent-runtime/protocol/registry";
import { type AgentInfo, CAPABILITY_NAMES, type Capabilities } from "@agent-runtime/protocol/agents";
import { withRegistry } from "./merge";

const none = Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, false])) as Capabilities;
const agent = (id: string, installed: boolean, installedVersion: string | null = null): AgentInfo => ({
  id,
  installed,
  installedVersion,
  credentialsAvailable: true,
  capabilities: none,
});
const entry = (id: string, version: string, distribution: RegistryAgent["distribution"]): RegistryAgent => ({
  id,
  name: id,
  version,
  description: "",
  distribution,
});

describe("withRegistry", () => {
  const catalog = [
    entry("claude-acp", "0.101.0", { npx: { package: "@agentclientprotocol/claude-agent-acp@0.101.0" } }),
    entry("acme", "2.0.0", { npx: { package: "acme@2.0.0" } }),
    entry("mac-only", "1.0.0", { binary: { "darwin-aarch64": { archive: "https://example.com/a.zip", cmd: "./a" } } }),
    entry("tool", "1.0.0", { binary: { "linux-x86_64": { archive: "https://example.com/t.tgz", cmd: "./t" } }, npx: { package: "tool@1.0.0" } }),
  ];

  it("matches a built-in agent by its registry id, and an installed registry agent by its own", () => {
    const merged = withRegistry([agent("claude", true, "0.23.1"), agent("mock", true, "1.0.0"), agent("acme", true, "1.0.0")], catalog, "linux-x64");
    const byId = Object.fromEntries(merged.map((a) => [a.id, a]));
    expect(byId.claude!.registry).toMatchObject({ id: "claude-acp", version: "0.101.0", installable: true });
    expect(byId.claude!.updateAvailable).toBe(true); // its adapter, 0.23.1, is behind the registry's 0.101.0
    expect(byId.mock!.registry).toBeNull();
    expect(byId.acme).toMatchObject({ installed: true, installedVersion: "1.0.0", updateAvailable: true });
  });

  it("says nothing of updates for an agent not installed, and none when it is current", () => {
    const merged = withRegistry([agent("claude", false), agent("acme", true, "2.0.0")], catalog, "linux-x64");
    expect(merged.find((a) => a.id === "claude")!.updateAvailable).toBeNull();
    expect(merged.find((a) => a.id === "acme")!.updateAvailable).toBe(false);
  });

  it("lists what the machine lacks, installable or with the reason it is not", () => {
    const merged = withRegistry([agent("claude", false)], catalog, "linux-x64");
    expect(merged.map((a) => a.id)).toEqual(["claude", "acme", "mac-only", "tool"]);
    const macOnly = merged.find((a) => a.id === "mac-only")!;
    expect(macOnly).toMatchObject({ installed: false, registry: { installable: false, distributions: ["binary"] } });
    expect(macOnly.registry!.reason).toContain("darwin-aarch64");
    expect(merged.find((a) => a.id === "tool")!.registry).toMatchObject({ installable: true, distributions: ["npx", "binary"] });
  });
});
