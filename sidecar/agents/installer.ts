/**
 * Real installs from the npm registry into the sidecar's data directory:
 *
 *   <dataDir>/agents/<agent>/<package>/<version>/node_modules/...   one folder per exact version
 *   <dataDir>/agents/<agent>/current.json                           which versions are in use
 *
 * A version is installed into a temporary folder and renamed into place only when npm
 * succeeded, so a failed install leaves the previous one working. Installs of one agent run
 * one after another. npm runs without a shell, as a tracked `system` process, and versions
 * are validated by the API schema before they get here.
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ProblemError } from "../../src/protocol/problems";
import type { AgentId, Artifact, InstallRequest, InstallResult } from "../../src/protocol/resources";
import { VersionSpec } from "../../src/protocol/resources";
import { logger } from "../log";
import type { ProcessManager } from "../processes";
import type { RegistryAgent } from "../../src/protocol/registry";
import { type AgentDefinition, type BuiltinAgentId, builtinAgent, type NpmPackage } from "./definitions";
import { RegistryInstaller } from "./registry-install";

const log = logger("install");

export interface InstalledArtifact {
  package: string;
  version: string;
  /** The bin that is run. */
  path: string;
}

export interface InstalledAgent {
  native?: InstalledArtifact;
  agentProcess?: InstalledArtifact;
}

export class Installer {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly registry: RegistryInstaller;

  constructor(
    private readonly dataDir: string,
    private readonly processes: ProcessManager,
    private readonly npmCommand = process.env.AGENT_RUNTIME_NPM ?? "npm",
    options: { agentNode?: string | null } = {},
  ) {
    this.registry = new RegistryInstaller({ dataDir, processes, npmCommand, agentNode: options.agentNode ?? null });
  }

  private agentDir(agent: AgentId): string {
    return join(this.dataDir, "agents", agent);
  }

  /** What is installed of a built-in agent (by its name or registry id); null for the registry's others. */
  installed(agent: AgentId): Promise<InstalledAgent | null> {
    const def = builtinAgent(agent);
    return def ? readInstalled(this.dataDir, def.id) : Promise.resolve(null);
  }

  /**
   * Serialized per agent: a second install of the same agent waits for the first. A built-in agent is
   * installed as its definition says; any other by its registry entry (`entry`, handed by the worker).
   */
  install(agent: AgentId, request: InstallRequest, entry?: RegistryAgent): Promise<InstallResult> {
    const def = builtinAgent(agent);
    if (!def && !entry) {
      return Promise.reject(new ProblemError("unsupported_agent", `'${agent}' is neither built in nor an agent of the registry the worker reads`));
    }
    const key = def?.id ?? agent;
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => (def ? this.installNow(def, request) : this.registry.install(entry!, request.reinstall === true)));
    this.queues.set(key, next);
    return next;
  }

  private async installNow(def: AgentDefinition, request: InstallRequest): Promise<InstallResult> {
    const agent: BuiltinAgentId = def.id;
    if (def.launch.from === "builtin") {
      return { already_installed: true, artifacts: [{ kind: "agent_process", path: "builtin:mock", source: "builtin", version: "1.0.0" }] };
    }
    if (def.unavailable) throw new ProblemError("package_unavailable", def.unavailable, { packages: [def.native?.name, def.acpAdapter?.name].filter(Boolean) });
    const current = (await this.installed(agent)) ?? {};
    const wanted: { kind: Artifact["kind"]; pkg: NpmPackage; requested: string | undefined; key: keyof InstalledAgent }[] = [];
    if (def.native) wanted.push({ kind: "native_agent", pkg: def.native, requested: request.agentVersion, key: "native" });
    if (def.acpAdapter) wanted.push({ kind: "agent_process", pkg: def.acpAdapter, requested: request.agentProcessVersion, key: "agentProcess" });

    // Every version is resolved before anything is installed: a package or version the registry does not
    // have fails the install before the first download, so an agent is never left half-installed.
    const plan: { w: (typeof wanted)[number]; keep: InstalledArtifact | null; version: string | null }[] = [];
    for (const w of wanted) {
      const have = current[w.key];
      // Nothing asked for and something is installed: keep it (use reinstall or a version to change it).
      if (have && have.package === w.pkg.name && w.requested === undefined && !request.reinstall) plan.push({ w, keep: have, version: null });
      else
        plan.push({ w, keep: null, version: await this.resolveVersion(agent, w.pkg.name, VersionSpec.parse(w.requested ?? w.pkg.defaultVersion ?? "latest")) });
    }

    let didSomething = false;
    const artifacts: Artifact[] = [];
    const next: InstalledAgent = { ...current };
    const freshTargets: string[] = [];
    try {
      for (const { w, keep, version } of plan) {
        if (keep) {
          artifacts.push({ kind: w.kind, path: keep.path, source: "npm", version: keep.version });
          continue;
        }
        const artifact = await this.installPackage(agent, w.pkg, version!, request.reinstall === true);
        if (artifact.fresh) freshTargets.push(artifact.target);
        didSomething ||= artifact.fresh;
        next[w.key] = { package: w.pkg.name, version: version!, path: artifact.path };
        artifacts.push({ kind: w.kind, path: artifact.path, source: "npm", version: version! });
      }
    } catch (err) {
      // What this attempt installed goes too (but never a version in use): the agent stays as it was.
      const inUse = new Set([current.native?.path, current.agentProcess?.path].filter(Boolean).map((path) => path!.split("/node_modules/")[0]));
      await Promise.all(freshTargets.filter((target) => !inUse.has(target)).map((target) => rm(target, { recursive: true, force: true })));
      throw err;
    }
    await mkdir(this.agentDir(agent), { recursive: true });
    await writeFile(join(this.agentDir(agent), "current.json"), JSON.stringify(next, null, 2));
    return { already_installed: !didSomething, artifacts };
  }

  /** A dist-tag or range becomes the exact version npm would install. */
  private async resolveVersion(agent: AgentId, name: string, spec: string): Promise<string> {
    const out = await this.npm(agent, ["view", `${name}@${spec}`, "version", "--json"], this.dataDir).catch((err: ProblemError) => {
      // The registry does not have the package at all: not our failure, and not the caller's.
      if (/No match found for version/.test(err.message))
        throw new ProblemError("invalid_request", `no version of ${name} matches '${spec}'`, { package: name, version: spec });
      if (/\bE404\b|404 Not Found/.test(err.message))
        throw new ProblemError("package_unavailable", `${name} is not on the npm registry this machine uses`, { package: name });
      throw err;
    });
    let parsed: unknown;
    try {
      parsed = JSON.parse(out || "null");
    } catch {
      parsed = null;
    }
    const version = Array.isArray(parsed) ? parsed[parsed.length - 1] : parsed;
    if (typeof version !== "string") throw new ProblemError("invalid_request", `no version of ${name} matches '${spec}'`, { package: name, version: spec });
    return version;
  }

  private async installPackage(
    agent: AgentId,
    pkg: NpmPackage,
    version: string,
    reinstall: boolean,
  ): Promise<{ path: string; fresh: boolean; target: string }> {
    const target = join(this.agentDir(agent), pkg.name.replace("/", "__"), version);
    const bin = join(target, "node_modules", ".bin", pkg.bin);
    if (!reinstall && (await exists(join(target, ".installed")))) return { path: bin, fresh: false, target };
    const staging = `${target}.staging-${process.pid}-${Date.now()}`;
    await mkdir(staging, { recursive: true });
    await writeFile(join(staging, "package.json"), JSON.stringify({ name: `agent-runtime-${agent}`, private: true }));
    log.info(`${agent}: installing ${pkg.name}@${version} ...`);
    try {
      await this.npm(agent, ["install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error", `${pkg.name}@${version}`], staging);
      if (!(await exists(join(staging, "node_modules", ".bin", pkg.bin)))) {
        throw new ProblemError("install_failed", `${pkg.name}@${version} installed but has no '${pkg.bin}' command`);
      }
      await writeFile(join(staging, ".installed"), new Date().toISOString());
      await rm(target, { recursive: true, force: true });
      await rename(staging, target);
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
    log.info(`${agent}: installed ${pkg.name}@${version}`);
    return { path: bin, fresh: true, target };
  }

  /** Run npm (no shell) as a tracked system process; its output is visible in the process logs. */
  private npm(agent: AgentId, args: string[], cwd: string): Promise<string> {
    return runTool(this.processes, { command: this.npmCommand, args, cwd, label: `install:${agent}`, what: `npm ${args[0]} failed for agent '${agent}'` });
  }
}

/**
 * Runs an install tool (npm, uv) without a shell as a tracked `system` process, so its output is in the
 * process logs; resolves to its stdout, or throws `install_failed` with the end of its stderr.
 */
export async function runTool(
  processes: ProcessManager,
  tool: { command: string; args: string[]; cwd: string; label: string; what: string; env?: Record<string, string> },
): Promise<string> {
  await mkdir(tool.cwd, { recursive: true });
  const proc = await processes.spawn({
    command: tool.command,
    args: tool.args,
    cwd: tool.cwd,
    owner: "system",
    interactive: false,
    tty: false,
    label: tool.label,
    env: { npm_config_update_notifier: "false", npm_config_fund: "false", ...tool.env },
  });
  proc.child.stdin?.end();
  await proc.exited;
  if (proc.info.exitCode !== 0) {
    const stderr = proc.outputText("stderr").trim().split("\n").slice(-8).join("\n");
    throw new ProblemError("install_failed", `${tool.what} (exit ${proc.info.exitCode ?? proc.info.signal}): ${stderr || "no output"}`);
  }
  return proc.outputText("stdout").trim();
}

/** What is installed of an agent in a data folder (also read by `agent-runtime-sidecar status`, with no sidecar running). */
export async function readInstalled(dataDir: string, agent: AgentId): Promise<InstalledAgent | null> {
  try {
    const current = JSON.parse(await readFile(join(dataDir, "agents", agent, "current.json"), "utf8")) as InstalledAgent;
    for (const artifact of [current.native, current.agentProcess]) {
      if (artifact && !(await exists(artifact.path))) return null; // removed behind our back
    }
    return current;
  } catch {
    return null;
  }
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
