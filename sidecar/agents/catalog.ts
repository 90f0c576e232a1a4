/**
 * What the machine knows about each agent: installed or not, whether credentials are at hand,
 * its capabilities, and (with `config`) its version, path and the configuration options its
 * ACP process offers. Versions are asked of the installed binary and cached per path.
 */
import { execFile } from "node:child_process";
import { access } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { type AgentInfo, UNKNOWN_CAPABILITIES } from "@agent-runtime/protocol/agents";
import { type AgentId, BUILTIN_AGENT_IDS } from "@agent-runtime/protocol/values";
import { spawnAgentProcess, type AcpServers, type AgentLauncher } from "../acp/acp-bridge";
import type { ProcessManager } from "../processes/processes";
import { errorText } from "../log";
import { registryIdOf } from "@agent-runtime/protocol/registry";
import { envAuthMethod } from "./auth";
import { type AgentDefinition, builtinAgent } from "./definitions";
import type { Installer } from "./installer";
import { MOCK_AGENT_PATH } from "./launcher";
import type { Enclosure } from "../sandbox/enclosure";
import { commandLine } from "./node-runner";
import { listRegistryInstalled, MACHINE_PLATFORM, type RegistryInstalled, readRegistryInstalled } from "./registry-install";

const PROBE_TIMEOUT_MS = 15_000;

export class AgentCatalog {
  private readonly versionCache = new Map<string, string | null>();
  private readonly probeCache = new Map<string, { options: unknown[] | null; error: string | null }>();

  constructor(
    private readonly installer: Installer,
    private readonly acp: AcpServers,
    private readonly processes: ProcessManager,
    private readonly launcher: AgentLauncher,
    private readonly home: string,
    private readonly dataDir: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
    /** The sandbox a probe's agent runs in, as any agent's does (sidecar/sandbox/sandboxes.ts): the owner's floor. */
    private readonly enclose: ((agent: AgentId) => Promise<Enclosure>) | null = null,
  ) {}

  /** The built-in agents, then every agent installed from the registry. */
  async list(opts: { config: boolean; noCache: boolean }): Promise<{ agents: AgentInfo[]; platform: string }> {
    const builtin = await Promise.all(BUILTIN_AGENT_IDS.map((id) => this.get(id, opts)));
    // A built-in name installed by its registry entry (amp) is listed once, by its name.
    const builtinIds = new Set<string>(BUILTIN_AGENT_IDS.map(registryIdOf));
    const fromRegistry = (await listRegistryInstalled(this.dataDir)).filter((r) => !builtinIds.has(r.id));
    const agents = [...builtin, ...(await Promise.all(fromRegistry.map((r) => this.registryInfo(r, opts))))];
    return { agents, platform: MACHINE_PLATFORM };
  }

  async get(agent: AgentId, opts: { config: boolean; noCache: boolean }): Promise<AgentInfo> {
    const def = builtinAgent(agent);
    if (def?.unavailable) {
      const installed = await readRegistryInstalled(this.dataDir, registryIdOf(def.id));
      if (installed) return { ...(await this.registryInfo(installed, opts)), id: agent, capabilities: def.capabilities };
    }
    if (!def) {
      const installed = await readRegistryInstalled(this.dataDir, agent);
      if (installed) return this.registryInfo(installed, opts);
      return {
        id: agent,
        installed: false,
        installedVersion: null,
        credentialsAvailable: false,
        capabilities: UNKNOWN_CAPABILITIES,
        serverStatus: this.serverStatus(agent),
      };
    }
    return this.builtinInfo(agent, def, opts);
  }

  /** An agent installed from its registry entry: what was recorded, and with `config` its options. */
  private async registryInfo(installed: RegistryInstalled, opts: { config: boolean; noCache: boolean }): Promise<AgentInfo> {
    const info: AgentInfo = {
      id: installed.id,
      name: installed.name,
      installed: true,
      installedVersion: installed.version,
      // Its credentials are its own business: it says what it needs when a session asks (authenticate).
      credentialsAvailable: true,
      capabilities: UNKNOWN_CAPABILITIES,
      serverStatus: this.serverStatus(installed.id),
    };
    if (!opts.config) return info;
    const key = `${installed.id}:${installed.command}`;
    const probe = (!opts.noCache && this.probeCache.get(key)) || (await this.probeConfigOptions(installed.id));
    this.probeCache.set(key, probe);
    return { ...info, path: installed.command, version: installed.version, configOptions: probe.options, configError: probe.error };
  }

  private async builtinInfo(agent: AgentId, def: AgentDefinition, opts: { config: boolean; noCache: boolean }): Promise<AgentInfo> {
    const record = def.launch.from === "builtin" ? null : await this.installer.installed(agent);
    const installed = def.launch.from === "builtin" ? true : record !== null;
    const info: AgentInfo = {
      id: agent,
      name: def.name,
      installed,
      installedVersion: def.launch.from === "builtin" ? "1.0.0" : ((def.launch.from === "native" ? record?.native : record?.agentProcess)?.version ?? null),
      credentialsAvailable: await this.credentialsAvailable(agent),
      capabilities: def.capabilities,
      serverStatus: this.serverStatus(agent),
    };
    if (def.unavailable) return { ...info, configError: def.unavailable, ...(opts.config ? { configOptions: null, path: null, version: null } : {}) };
    if (!opts.config) return info;
    const command = await this.runningCommand(agent);
    const path = command?.path ?? null;
    info.path = path;
    // Asked of the binary; an adapter that cannot say (`--version` unsupported) reports the version npm installed.
    info.version = command ? ((await this.version(command, opts.noCache)) ?? (await this.recordedVersion(agent))) : null;
    if (installed) {
      // Cached per binary like the version; no_cache asks the agent again.
      const key = `${agent}:${path}`;
      const probe = (!opts.noCache && this.probeCache.get(key)) || (await this.probeConfigOptions(agent));
      this.probeCache.set(key, probe);
      info.configOptions = probe.options;
      info.configError = probe.error;
    } else {
      info.configOptions = null;
      info.configError = null;
    }
    return info;
  }

  private async credentialsAvailable(agent: AgentId): Promise<boolean> {
    const { env, files } = builtinAgent(agent)?.credentials ?? { env: [], files: [] };
    if (env.length === 0 && files.length === 0) return true; // needs none
    if (env.some((name) => (this.env[name] ?? "").trim() !== "")) return true;
    for (const file of files) {
      if (
        await access(join(this.home, file)).then(
          () => true,
          () => false,
        )
      )
        return true;
    }
    return false;
  }

  private serverStatus(agent: AgentId): AgentInfo["serverStatus"] {
    const servers = this.acp.list().filter((s) => s.agent === agent);
    if (servers.length === 0) return { status: "stopped", uptimeMs: null, servers: 0 };
    const oldest = Math.min(...servers.map((s) => s.createdAtMs));
    return { status: "running", uptimeMs: Date.now() - oldest, servers: servers.length };
  }

  /** The installed command that runs the agent's turns (see running); the mock is a script of the sidecar's. */
  private async runningCommand(agent: AgentId): Promise<{ path: string; script?: string; node?: string } | null> {
    if (builtinAgent(agent)?.launch.from === "builtin") return { path: MOCK_AGENT_PATH, script: MOCK_AGENT_PATH };
    return (await this.running(agent)) ?? null;
  }

  private async recordedVersion(agent: AgentId): Promise<string | null> {
    return (await this.running(agent))?.version ?? null;
  }

  /**
   * The installed binary that runs the agent's turns, which is what is reported: the agent itself when it
   * is launched, or when its adapter is pointed at it (`nativeEnv`); the adapter when the adapter carries
   * the agent inside it (codex-acp embeds Codex and never runs the `codex` binary).
   */
  private async running(agent: AgentId) {
    const def = builtinAgent(agent);
    const installed = await this.installer.installed(agent);
    const adapterOnly = def?.launch.from === "acpAdapter" && !def.launch.nativeEnv;
    return adapterOnly ? installed?.agentProcess : (installed?.native ?? installed?.agentProcess);
  }

  /** `<binary> --version` (on the Node it runs on), the first version-looking thing it prints; cached per path. */
  private async version(installed: { path: string; script?: string; node?: string }, noCache: boolean): Promise<string | null> {
    const path = installed.path;
    if (!noCache && this.versionCache.has(path)) return this.versionCache.get(path)!;
    const { command, args } = commandLine(installed, ["--version"]);
    const out = await new Promise<string>((resolve) => {
      execFile(command, args, { timeout: 10_000, env: this.env }, (_err, stdout, stderr) => resolve(`${stdout}\n${stderr}`));
    });
    const version = /\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?/.exec(out)?.[0] ?? null;
    this.versionCache.set(path, version);
    return version;
  }

  /**
   * Start the agent's ACP process, `initialize` and `session/new`, and read the configuration
   * options it offers. Slow by nature, hence only with `config=true`; a failure is `configError`.
   */
  private async probeConfigOptions(agent: AgentId): Promise<{ options: unknown[] | null; error: string | null }> {
    let proc: Awaited<ReturnType<typeof spawnAgentProcess>>;
    try {
      const enclosure = this.enclose ? await this.enclose(agent) : null;
      const launch = await this.launcher(agent);
      proc = await spawnAgentProcess(this.processes, enclosure ? await enclosure.wrap(agent, launch) : launch, `probe:${agent}`).catch(async (err: unknown) => {
        await enclosure?.dispose();
        throw err;
      });
      void proc.exited.then(() => enclosure?.dispose());
    } catch (err) {
      return { options: null, error: errorText(err) };
    }
    const child = proc.child;
    let stderr = "";
    child.stderr!.on("data", (d: string | Buffer) => {
      stderr = (stderr + String(d)).slice(-400);
    });
    // The ACP SDK's own client speaks to the agent: initialize, then session/new, within the deadline.
    // Loaded when first needed: most sidecars never probe, and it need not sit in their memory.
    const { client, methods, ndJsonStream, PROTOCOL_VERSION } = await import("@agentclientprotocol/sdk");
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code) => reject(new Error(`exited (${code}) during the probe${stderr ? `: ${stderr.trim()}` : ""}`))),
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
    });
    // Whichever loses the race below rejects later with nobody listening: that is expected, not an error.
    exited.catch(() => undefined);
    deadline.catch(() => undefined);
    // Node's web streams typed as the DOM's the ACP SDK takes: the same objects, two typings.
    const stream = ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
    try {
      const session = await Promise.race([
        exited,
        deadline,
        client({ name: "agent-runtime-probe" }).connectWith(stream, async (agent) => {
          const initialized = await agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
          // As a relay session does (sidecar/agents/auth.ts): an API key in the environment logs the agent in.
          const methodId = envAuthMethod(initialized, this.env);
          if (methodId) await agent.request(methods.agent.authenticate, { methodId });
          return agent.request(methods.agent.session.new, { cwd: proc.info.cwd, mcpServers: [] });
        }),
      ]);
      return { options: Array.isArray(session.configOptions) ? session.configOptions : [], error: null };
    } catch (err) {
      return { options: null, error: errorText(err) };
    } finally {
      clearTimeout(timer);
      void proc.terminate();
    }
  }
}
