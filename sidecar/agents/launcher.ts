/** Turns an agent id into the command line of its ACP process, as its definition says. */
import { fileURLToPath } from "node:url";
import { ProblemError } from "../../src/protocol/problems";
import type { AgentId } from "../../src/protocol/resources";
import type { AgentLaunch } from "../acp-bridge";
import { AGENTS } from "./definitions";
import type { Installer } from "./installer";

/** The mock agent ships next to the sidecar bundle (sidecar/dist/mock-agent.js). */
export const MOCK_AGENT_PATH = fileURLToPath(new URL("./mock-agent.js", import.meta.url));

export function createLauncher(installer: Installer, workdir: string) {
  return async (agent: AgentId): Promise<AgentLaunch> => {
    const def = AGENTS[agent];
    if (def.launch.from === "builtin") {
      return { command: process.execPath, args: [MOCK_AGENT_PATH, ...def.launch.args], cwd: workdir };
    }
    const installed = await installer.installed(agent);
    const artifact = def.launch.from === "native" ? installed?.native : installed?.agentProcess;
    if (!artifact) {
      throw new ProblemError("agent_not_installed", `agent '${agent}' is not installed on this machine: POST /v1/agents/${agent}/install first`);
    }
    return { command: artifact.path, args: def.launch.args, cwd: workdir };
  };
}
