import { describe, expect, it } from "vitest";
import { AgentSettingsEnv, AgentsConfig } from "./agents-config";
import { McpConfig } from "./mcp";

const many = <V>(n: number, value: V, prefix = "k") => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, value]));

describe("a bounded record (BoundedRecord)", () => {
  it("takes up to its bound and refuses one more, naming what it counts", () => {
    const server = { type: "local", command: "mcp-server" };
    expect(McpConfig.safeParse({ servers: many(64, server) }).success).toBe(true);
    expect(McpConfig.safeParse({ servers: many(65, server) }).error?.issues.map((i) => i.message)).toEqual(["at most 64 servers"]);
    expect(AgentsConfig.safeParse({ agents: many(65, {}, "agent-") }).error?.issues.map((i) => i.message)).toEqual(["at most 64 agents"]);
    expect(AgentSettingsEnv.safeParse(many(32, "v", "V")).success).toBe(true);
    expect(AgentSettingsEnv.safeParse(many(33, "v", "V")).error?.issues.map((i) => i.message)).toEqual(["at most 32 variables"]);
  });
});
