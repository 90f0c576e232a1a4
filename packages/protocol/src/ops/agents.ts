/** The tunnel's agent operations: what a machine has, installs, and the team's agents applied. */
import { z } from "zod";
import { AgentInfo, AgentList, InstallRequest, InstallResult } from "../agents";
import { AgentsApplyArgs, AgentsApplyResult } from "../agents-config";
import { RegistryAgent } from "../registry";
import { AgentId } from "../values";
import { MINUTE, type OpDefinition } from "./define";

/** Installing an agent: npm, a download, several agents for the team's document. */
const INSTALL_MS = 15 * 60_000;

export const AGENT_OPS = {
  "agents.list": { deadlineMs: MINUTE, readOnly: true, args: z.object({ config: z.boolean(), noCache: z.boolean() }), result: AgentList },
  "agents.get": {
    deadlineMs: MINUTE,
    readOnly: true,
    problems: ["unsupported_agent"],
    args: z.object({ agent: AgentId, config: z.boolean(), noCache: z.boolean() }),
    // The machine's platform rides along (absent from sidecars before it), for what the registry offers it.
    result: AgentInfo.extend({ platform: z.string().optional() }),
  },
  "agents.install": {
    deadlineMs: INSTALL_MS,
    problems: ["unsupported_agent", "install_failed", "package_unavailable"],
    args: z.object({
      agent: AgentId,
      request: InstallRequest,
      entry: RegistryAgent.optional().describe("the registry's entry, for an agent that is not built in"),
    }),
    result: InstallResult,
  },
  "agents.apply": { deadlineMs: INSTALL_MS, args: AgentsApplyArgs, result: AgentsApplyResult },
} as const satisfies Record<string, OpDefinition>;
