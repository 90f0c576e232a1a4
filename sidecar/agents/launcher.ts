/** Turns an agent id into the command line of its ACP process, as its definition says. */
import { readdir } from "node:fs/promises";
import { delimiter, dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { AgentLaunch } from "../acp/acp-bridge";
import { builtinAgent } from "./definitions";
import { registryIdOf } from "@agent-runtime/protocol/registry";
import type { Installer } from "./installer";
import { commandLine } from "./node-runner";
import { readRegistryInstalled } from "./registry-install";
import { ensurePackageBoundary } from "./install-tools";

/** The mock agent ships next to the sidecar bundle (sidecar/dist/mock-agent.js). */
export const MOCK_AGENT_PATH = fileURLToPath(new URL("./mock-agent.js", import.meta.url));

export interface LauncherOptions {
  workdir: string;
  /** The sidecar runs as root and its owner said agents may too (--allow-root-agents). */
  allowRootAgents?: boolean;
  /** Whether this process is root (a parameter so that tests need not be root). */
  isRoot?: boolean;
  /** The sidecar's data folder: the built-in mock keeps its sessions there, as a real agent keeps its own in HOME. */
  dataDir?: string;
  /** The team's default environment for an agent (sidecar/agents/team-agents.ts), under what the launch itself sets. */
  teamEnv?: (agent: AgentId) => Promise<Record<string, string>>;
}

export function createLauncher(installer: Installer, options: LauncherOptions) {
  const isRoot = options.isRoot ?? process.getuid?.() === 0;
  const launch = async (agent: AgentId): Promise<AgentLaunch> => {
    const def = builtinAgent(agent);
    if (!def || def.unavailable) {
      // An agent of the registry (or a built-in name with no package of its own): what its install recorded.
      const installed = options.dataDir ? await readRegistryInstalled(options.dataDir, def ? registryIdOf(def.id) : agent) : null;
      if (!installed) {
        throw new ProblemError(
          "unsupported_agent",
          `'${agent}' is not a built-in agent and is not installed on this machine: if the ACP registry lists it, POST /v1/agents/${agent}/install first`,
        );
      }
      // Installed before agents' folders were a package of their own: made one now, before it starts.
      if (options.dataDir) await ensurePackageBoundary(options.dataDir);
      const env = Object.keys(installed.env).length ? { env: installed.env } : {};
      return { ...commandLine({ ...installed, path: installed.command }, installed.args), cwd: options.workdir, ...env };
    }
    if (def.launch.from === "builtin") {
      // Its sessions and its login (mock-login's credentials file) are the machine's, under the sidecar's data folder.
      const env: Record<string, string> = options.dataDir
        ? { MOCK_AGENT_STATE_DIR: join(options.dataDir, "mock-agent", "sessions"), MOCK_AGENT_HOME: join(options.dataDir, "mock-agent") }
        : {};
      return { command: process.execPath, args: [MOCK_AGENT_PATH, ...def.launch.args], cwd: options.workdir, env };
    }
    const installed = await installer.installed(agent);
    const artifact = def.launch.from === "native" ? installed?.native : installed?.agentProcess;
    if (!artifact) {
      throw new ProblemError("agent_not_installed", `agent '${agent}' is not installed on this machine: POST /v1/agents/${agent}/install first`);
    }
    const env: Record<string, string> = {};
    if (def.launch.nativeEnv && installed?.native) env[def.launch.nativeEnv] = installed.native.path;
    if (def.launch.nativeHelpers && installed?.native) {
      const helpers = await findFolder(installRoot(installed.native.path), def.launch.nativeHelpers);
      if (helpers) env.PATH = `${helpers}${delimiter}${process.env.PATH ?? ""}`;
    }
    if (isRoot && def.asRoot) {
      // Never bypassed silently: the machine's owner opts in, knowing what the agent's own check is for.
      if (!options.allowRootAgents) {
        throw new ProblemError(
          "conflict",
          `the sidecar runs as root, and ${def.asRoot.why}. Run the sidecar as a normal user, or start it with --allow-root-agents (AGENT_RUNTIME_ALLOW_ROOT_AGENTS=1) on a machine meant for it, such as a container`,
        );
      }
      Object.assign(env, def.asRoot.env);
    }
    return { ...commandLine(artifact, def.launch.args), cwd: options.workdir, ...(Object.keys(env).length ? { env } : {}) };
  };
  return async (agent: AgentId): Promise<AgentLaunch> => {
    const [launched, team] = await Promise.all([launch(agent), options.teamEnv?.(agent) ?? {}]);
    if (Object.keys(team).length === 0) return launched;
    return { ...launched, env: { ...team, ...launched.env } };
  };
}

/** The `node_modules` folder an installed bin lives in (`…/<version>/node_modules/.bin/<bin>`). */
function installRoot(binPath: string): string {
  const at = binPath.lastIndexOf(`${sep}node_modules${sep}`);
  return at === -1 ? dirname(binPath) : binPath.slice(0, at + `${sep}node_modules`.length);
}

/** The first folder named `name` under `root`, breadth first, a few levels deep (platform packages nest it). */
export async function findFolder(root: string, name: string, maxDepth = 6): Promise<string | null> {
  let level = [root];
  for (let depth = 0; depth < maxDepth && level.length > 0; depth++) {
    const next: string[] = [];
    for (const folder of level) {
      const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        if (!entry.isDirectory()) continue;
        const path = join(folder, entry.name);
        if (entry.name === name) return path;
        if (entry.name !== ".bin") next.push(path);
      }
    }
    level = next;
  }
  return null;
}
