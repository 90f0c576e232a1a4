/**
 * The team's agents document on this machine (docs/architecture.md, "Team configuration"): every agent it
 * names is installed, or upgraded, to the version it asks (`latest`: the registry's), one agent after
 * another, and its non-secret settings are kept for the launcher:
 *
 *   <dataDir>/agents/team-env.json   per agent (by registry id): the document's default environment
 *
 * Applied when the machine connects and whenever the document changes; reported per agent.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { AgentsApplyArgs, AgentsApplyResult } from "@agent-runtime/protocol/agents-config";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { type RegistryAgent, registryIdOf, splitPackageSpec } from "@agent-runtime/protocol/registry";
import type { InstallRequest, InstallResult } from "@agent-runtime/protocol/agents";
import { writeFileAtomic } from "../atomic-file";
import { errorText, logger } from "../log";
import { SerialApply } from "../config/serial-apply";
import { builtinAgent } from "./definitions";
import type { Installer } from "./installer";

const log = logger("team-agents");

/** The kept settings, per agent by registry id (read back from the data folder, so parsed). */
const TeamEnv = z.record(z.string(), z.record(z.string(), z.string()));
type TeamEnv = z.infer<typeof TeamEnv>;

export class TeamAgents {
  private readonly serial = new SerialApply<AgentsApplyArgs, AgentsApplyResult>((args) => this.applyNow(args));
  private env: TeamEnv | null = null;

  constructor(
    private readonly installer: Installer,
    private readonly dataDir: string,
    /** Called after an apply that installed something (the team's skills and MCP servers follow). */
    private readonly onInstalled: () => void = () => undefined,
  ) {}

  private get envFile(): string {
    return join(this.dataDir, "agents", "team-env.json");
  }

  /** One apply at a time, in the order asked for (installs of one agent never overlap). */
  apply(args: AgentsApplyArgs): Promise<AgentsApplyResult> {
    return this.serial.apply(args);
  }

  /**
   * The document's default environment for an agent (by any of its names), less what the sidecar's own
   * environment sets: the machine's settings win over the team's defaults.
   */
  async envFor(agent: string): Promise<Record<string, string>> {
    const defaults = (await this.kept())[registryIdOf(agent)] ?? {};
    return Object.fromEntries(Object.entries(defaults).filter(([name]) => process.env[name] === undefined));
  }

  /** The settings of the document applied last (read once from the data folder; none if it is unreadable). */
  private async kept(): Promise<TeamEnv> {
    if (this.env) return this.env;
    const text = await readFile(this.envFile, "utf8").catch(() => null);
    let parsed: unknown = null;
    try {
      parsed = text === null ? null : JSON.parse(text);
    } catch {
      log.warn(`${this.envFile} is not JSON: the team's agent settings apply again with the next document`);
    }
    this.env = TeamEnv.safeParse(parsed).data ?? {};
    return this.env;
  }

  private async applyNow({ version, config, entries }: AgentsApplyArgs): Promise<AgentsApplyResult> {
    const agents: AgentsApplyResult["agents"] = {};
    const errors: AgentsApplyResult["errors"] = [];
    let changed = false;
    for (const [agent, wanted] of Object.entries(config.agents)) {
      try {
        const { request, entry } = installArgs(agent, wanted.version, entries[agent]);
        const result = await this.installer.install(agent, request, entry);
        changed ||= !result.already_installed;
        agents[agent] = { installedVersion: launchedVersion(agent, result), error: null };
      } catch (err) {
        const error = errorText(err);
        log.warn(`${agent}: not applied: ${error}`);
        errors.push({ agent, error });
        agents[agent] = { installedVersion: null, error };
      }
    }
    if (changed) this.onInstalled();
    const env: TeamEnv = Object.fromEntries(
      Object.entries(config.agents)
        .filter(([, wanted]) => wanted.env && Object.keys(wanted.env).length > 0)
        .map(([agent, wanted]) => [registryIdOf(agent), wanted.env!]),
    );
    if (JSON.stringify(env) !== JSON.stringify(await this.kept())) {
      await writeFileAtomic(this.envFile, JSON.stringify(env, null, 2));
      this.env = env;
      changed = true;
    }
    return { version, unchanged: !changed && errors.length === 0, appliedAtMs: Date.now(), agents, errors };
  }
}

/**
 * The install that brings an agent to the document's version. `latest` is the registry's entry as it is
 * (a built-in agent takes the version of the package the entry names). A pinned version is that of what
 * runs the agent: the adapter of an agent driven through one, else the agent; for an agent known only
 * from the registry, its npm package at that version (a binary is pinned only to the version listed).
 */
export function installArgs(agent: string, version: string, entry: RegistryAgent | undefined): { request: InstallRequest; entry?: RegistryAgent } {
  const def = builtinAgent(agent);
  const withEntry = entry ? { entry } : {};
  if (def && !def.unavailable) {
    if (version === "latest") return { request: {}, ...withEntry };
    return { request: def.launch.from === "native" ? { agentVersion: version } : { agentProcessVersion: version }, ...withEntry };
  }
  if (!entry) throw new ProblemError("unsupported_agent", `'${agent}' is not in the ACP registry this deployment reads`);
  if (version === "latest" || version === entry.version) return { request: {}, entry };
  const npx = entry.distribution.npx;
  if (!npx) {
    throw new ProblemError(
      "invalid_request",
      `the registry offers ${entry.id} ${entry.version} only (as a ${Object.keys(entry.distribution).join(" or ")} distribution): it cannot be pinned to ${version}`,
    );
  }
  const { name } = splitPackageSpec(npx.package);
  return { request: {}, entry: { ...entry, version, distribution: { npx: { ...npx, package: `${name}@${version}` } } } };
}

/** The version of what runs the agent, from an install's artifacts (the adapter of an agent behind one). */
function launchedVersion(agent: string, result: InstallResult): string | null {
  const kind = builtinAgent(agent)?.launch.from === "native" ? "native_agent" : "agent_process";
  return (result.artifacts.find((a) => a.kind === kind) ?? result.artifacts.at(-1))?.version ?? null;
}
