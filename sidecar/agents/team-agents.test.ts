import { describe, expect, it } from "vitest";
import type { RegistryAgent } from "@agent-runtime/protocol/registry";
import { installArgs } from "./team-agents";

const npxEntry: RegistryAgent = {
  id: "acme",
  name: "Acme",
  version: "2.0.0",
  description: "",
  distribution: { npx: { package: "@acme/agent@2.0.0", args: ["--acp"] } },
};
const binaryEntry: RegistryAgent = {
  id: "tool",
  name: "Tool",
  version: "1.0.0",
  description: "",
  distribution: { binary: { "linux-x86_64": { archive: "https://example.com/tool-1.0.0.tgz", cmd: "./tool" } } },
};
const claudeEntry: RegistryAgent = {
  id: "claude-acp",
  name: "Claude",
  version: "0.101.0",
  description: "",
  distribution: { npx: { package: "@agentclientprotocol/claude-agent-acp@0.101.0" } },
};

describe("installArgs", () => {
  it("installs a built-in agent at the registry's version for latest, and pins what runs it", () => {
    expect(installArgs("claude", "latest", claudeEntry)).toEqual({ request: {}, entry: claudeEntry });
    // Claude runs through its adapter: the pin is the adapter's; Gemini CLI runs itself.
    expect(installArgs("claude", "0.100.0", claudeEntry).request).toEqual({ agentProcessVersion: "0.100.0" });
    expect(installArgs("gemini", "0.60.0", undefined)).toEqual({ request: { agentVersion: "0.60.0" } });
  });

  it("pins a registry agent's npm package, and a binary only to the version listed", () => {
    expect(installArgs("acme", "latest", npxEntry)).toEqual({ request: {}, entry: npxEntry });
    const pinned = installArgs("acme", "1.5.0", npxEntry).entry!;
    expect(pinned.version).toBe("1.5.0");
    expect(pinned.distribution).toEqual({ npx: { package: "@acme/agent@1.5.0", args: ["--acp"] } });
    expect(installArgs("tool", "1.0.0", binaryEntry).entry).toBe(binaryEntry);
    expect(() => installArgs("tool", "0.9.0", binaryEntry)).toThrow(/only.*cannot be pinned to 0.9.0/);
  });

  it("refuses an agent the registry does not list and the runtime does not know", () => {
    expect(() => installArgs("nobody", "latest", undefined)).toThrow(/not in the ACP registry/);
  });
});
