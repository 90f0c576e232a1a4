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
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { Artifact, InstallRequest, InstallResult } from "@agent-runtime/protocol/agents";
import type { AgentId } from "@agent-runtime/protocol/values";
import { VersionSpec } from "@agent-runtime/protocol/values";
import { logger } from "../log";
import type { ProcessManager } from "../processes/processes";
import { type RegistryAgent, splitPackageSpec } from "@agent-runtime/protocol/registry";
import { type AgentDefinition, type BuiltinAgentId, builtinAgent, type NpmPackage } from "./definitions";
import { satisfiesRange } from "./node-range";
import { type NodeScript, nodeRunnerFor, relocated } from "./node-runner";
import { RegistryInstaller } from "./registry-install";
import { ensurePackageBoundary, exists, runTool } from "./install-tools";
import { z } from "zod";
import { readJsonFile } from "../json-file";

const log = logger("install");

export const InstalledArtifact = z.object({
  package: z.string(),
  version: z.string(),
  /** The bin that is run. */
  path: z.string(),
  /** A Node script: its real file, and the Node it needs when the sidecar's does not do (sidecar/agents/node-runner.ts). */
  script: z.string().optional(),
  node: z.string().optional(),
});
export type InstalledArtifact = z.output<typeof InstalledArtifact>;

/** `current.json`: which versions of an agent are in use. */
export const InstalledAgent = z.object({ native: InstalledArtifact.optional(), agentProcess: InstalledArtifact.optional() });
export type InstalledAgent = z.output<typeof InstalledAgent>;

export class Installer {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly registry: RegistryInstaller;

  constructor(
    private readonly dataDir: string,
    private readonly processes: ProcessManager,
    private readonly npmCommand = process.env.AGENT_RUNTIME_NPM ?? "npm",
    private readonly options: { agentNode?: string | null } = {},
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
   * installed as its definition says, at the version its registry entry names unless the request names
   * one; any other agent by its registry entry (`entry`, handed by the worker).
   */
  install(agent: AgentId, request: InstallRequest, entry?: RegistryAgent): Promise<InstallResult> {
    const def = builtinAgent(agent);
    if (!def && !entry) {
      return Promise.reject(new ProblemError("unsupported_agent", `'${agent}' is neither built in nor an agent of the registry the worker reads`));
    }
    // A built-in name with no package of its own (amp) installs as its registry entry, when there is one.
    const byRegistry = entry && (!def || def.unavailable);
    const key = byRegistry ? entry.id : (def?.id ?? agent);
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(() => (byRegistry ? this.registry.install(entry, request.reinstall === true) : this.installNow(def!, request, entry)));
    this.queues.set(key, next);
    return next;
  }

  private async installNow(def: AgentDefinition, request: InstallRequest, entry?: RegistryAgent): Promise<InstallResult> {
    const agent: BuiltinAgentId = def.id;
    if (def.launch.from === "builtin") {
      return { already_installed: true, artifacts: [{ kind: "agent_process", path: "builtin:mock", source: "builtin", version: "1.0.0" }] };
    }
    if (def.unavailable) throw new ProblemError("package_unavailable", def.unavailable, { packages: [def.native?.name, def.acpAdapter?.name].filter(Boolean) });
    await ensurePackageBoundary(this.dataDir);
    const current = (await this.installed(agent)) ?? {};
    const npx = entry?.distribution.npx;
    const registry = npx ? splitPackageSpec(npx.package) : null;
    // An entry that names no version (`latest`) asks for nothing: what is installed stays, and no connect
    // asks npm what `latest` is now.
    const asked = (pkg: NpmPackage, requested: string | undefined) =>
      requested ??
      (registry?.name === pkg.name && registry.version !== "latest" && VersionSpec.safeParse(registry.version).success ? registry.version : undefined);

    // Every version is resolved before anything is installed: a package or version the registry does not
    // have fails the install before the first download, so an agent is never left half-installed. The
    // adapter first: the agent it drives is installed at the version the adapter depends on, unless asked.
    const plan: { kind: Artifact["kind"]; pkg: NpmPackage; key: keyof InstalledAgent; keep: InstalledArtifact | null; version: string | null }[] = [];
    const decide = async (kind: Artifact["kind"], pkg: NpmPackage, key: keyof InstalledAgent, requested: string | undefined, pairedRange?: string) => {
      const have = current[key];
      const sameAsHave = have?.package === pkg.name && (requested === undefined || requested === have.version);
      // Nothing asked for (or what is installed) and it suits the adapter: keep it (reinstall or a version changes it).
      if (have && sameAsHave && !request.reinstall && (requested !== undefined || !pairedRange || satisfiesRange(have.version, pairedRange))) {
        plan.push({ kind, pkg, key, keep: have, version: null });
        return have.version;
      }
      const version = await this.resolveVersion(agent, pkg.name, VersionSpec.parse(requested ?? pairedRange ?? pkg.defaultVersion ?? "latest"));
      plan.push({ kind, pkg, key, keep: null, version });
      return version;
    };
    let adapterVersion: string | null = null;
    if (def.acpAdapter) adapterVersion = await decide("agent_process", def.acpAdapter, "agentProcess", asked(def.acpAdapter, request.agentProcessVersion));
    if (def.native) {
      const requested = asked(def.native, request.agentVersion);
      // Asked of the registry only when it may matter: no version named, and no agent installed yet or the adapter changes.
      const adapterChanges = plan.some((p) => p.key === "agentProcess" && p.keep === null);
      const paired =
        def.acpAdapter && adapterVersion && requested === undefined && (!current.native || adapterChanges)
          ? await this.dependencyRange(agent, def.acpAdapter.name, adapterVersion, def.native.name)
          : undefined;
      await decide("native_agent", def.native, "native", requested, paired);
    }
    plan.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === "native_agent" ? -1 : 1)); // reported as before: the agent, then its adapter

    let didSomething = false;
    const artifacts: Artifact[] = [];
    const next: InstalledAgent = { ...current };
    const freshTargets: string[] = [];
    try {
      for (const { kind, pkg, key, keep, version } of plan) {
        if (keep) {
          artifacts.push({ kind, path: keep.path, source: "npm", version: keep.version });
          continue;
        }
        const { fresh, target, ...installed } = await this.installPackage(agent, pkg, version!, request.reinstall === true);
        if (fresh) freshTargets.push(target);
        didSomething ||= fresh;
        next[key] = { package: pkg.name, version: version!, ...installed };
        artifacts.push({ kind, path: installed.path, source: "npm", version: version! });
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

  /** The range of `dependency` that `name@version` depends on (Codex for codex-acp), if it names one. */
  private async dependencyRange(agent: AgentId, name: string, version: string, dependency: string): Promise<string | undefined> {
    const out = await this.npm(agent, ["view", `${name}@${version}`, "dependencies", "--json"], this.dataDir);
    let dependencies: unknown;
    try {
      dependencies = JSON.parse(out || "{}");
    } catch {
      return undefined; // not said in a form we read: the agent's own default applies
    }
    const range = z.record(z.string(), z.unknown()).safeParse(dependencies).data?.[dependency];
    return typeof range === "string" && VersionSpec.safeParse(range).success ? range : undefined;
  }

  private async installPackage(
    agent: AgentId,
    pkg: NpmPackage,
    version: string,
    reinstall: boolean,
  ): Promise<{ path: string; script?: string; node?: string; fresh: boolean; target: string }> {
    const target = join(this.agentDir(agent), pkg.name.replace("/", "__"), version);
    const bin = join(target, "node_modules", ".bin", pkg.bin);
    if (!reinstall && (await exists(join(target, ".installed")))) {
      // Installed before: how it runs is asked again (the sidecar may now run on another Node).
      return { path: bin, ...(await this.runnerOf(target, pkg)), fresh: false, target };
    }
    const staging = `${target}.staging-${process.pid}-${Date.now()}`;
    let runner: NodeScript | null = null;
    await mkdir(staging, { recursive: true });
    await writeFile(join(staging, "package.json"), JSON.stringify({ name: `agent-runtime-${agent}`, private: true }));
    log.info(`${agent}: installing ${pkg.name}@${version} ...`);
    try {
      await this.npm(agent, ["install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error", `${pkg.name}@${version}`], staging);
      if (!(await exists(join(staging, "node_modules", ".bin", pkg.bin)))) {
        throw new ProblemError("install_failed", `${pkg.name}@${version} installed but has no '${pkg.bin}' command`);
      }
      // A package whose Node no Node here satisfies is refused now, leaving nothing behind.
      runner = await relocated(await this.runnerOf(staging, pkg), staging, target);
      await writeFile(join(staging, ".installed"), new Date().toISOString());
      await rm(target, { recursive: true, force: true });
      await rename(staging, target);
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
    log.info(`${agent}: installed ${pkg.name}@${version}`);
    return { path: bin, ...runner, fresh: true, target };
  }

  /** How the package's bin in `root` runs: natively (nothing), or as a script on a Node that satisfies it. */
  private runnerOf(root: string, pkg: NpmPackage): Promise<NodeScript | null> {
    return nodeRunnerFor(join(root, "node_modules", pkg.name), join(root, "node_modules", ".bin", pkg.bin), { agentNode: this.options.agentNode ?? null });
  }

  /** Run npm (no shell) as a tracked system process; its output is visible in the process logs. */
  private npm(agent: AgentId, args: string[], cwd: string): Promise<string> {
    return runTool(this.processes, { command: this.npmCommand, args, cwd, label: `install:${agent}`, what: `npm ${args[0]} failed for agent '${agent}'` });
  }
}

/** What is installed of an agent in a data folder (also read by `agent-runtime-sidecar status`, with no sidecar running). */
export async function readInstalled(dataDir: string, agent: AgentId): Promise<InstalledAgent | null> {
  try {
    const current = await readJsonFile(join(dataDir, "agents", agent, "current.json"), InstalledAgent);
    for (const artifact of [current.native, current.agentProcess]) {
      if (artifact && !(await exists(artifact.path))) return null; // removed behind our back
    }
    return current;
  } catch {
    return null;
  }
}
