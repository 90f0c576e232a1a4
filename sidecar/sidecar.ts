/**
 * A sidecar: the machine's process manager, ACP servers, agents and skills, reachable
 * through one tunnel. This file only wires the parts together and maps tunnel operations
 * to them.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { AcpServers } from "./acp/acp-bridge";
import { AgentCatalog } from "./agents/catalog";
import { DirectoryConfig } from "./config/directory-config";
import { MachineFiles, UPLOAD_WINDOW } from "./files/files";
import { installedMcpTargets, McpApplier } from "./config/mcp";
import { Installer } from "./agents/installer";
import { createLauncher } from "./agents/launcher";
import { MACHINE_PLATFORM } from "./agents/registry-install";
import { TeamAgents } from "./agents/team-agents";
import { AgentValues } from "./logins/agent-values";
import { AgentLogins, withAgentValues } from "./logins/logins";
import { LIMITS } from "@agent-runtime/protocol/limits";
import type { AgentId } from "@agent-runtime/protocol/values";
import { logger } from "./log";
import { ChildRegistry } from "./orphans";
import { installedSkillsDirs, SkillsApplier } from "./config/skills";
import { DEFAULT_PROCESS_LIMITS, ProcessManager, type ProcessLimits } from "./processes/processes";
import { processHandlers, processStream } from "./processes/process-ops";
import { Checkpoints } from "./review/checkpoints";
import { reviewHandlers } from "./review/review-ops";
import { attemptHandlers } from "./attempts/attempt-ops";
import { Checks } from "./attempts/checks";
import { SessionHooks } from "./review/session-hooks";
import { Worktrees } from "./review/worktrees";
import type { StreamResolver } from "./streams/stream-hub";
import { writeStatus, type SidecarStatus } from "./status-file";
import { ExposedPorts } from "./preview/exposed-ports";
import { listeningPorts } from "./preview/listening-ports";
import { PortWatch } from "./preview/port-watch";
import { PreviewProxy } from "./preview/preview-proxy";
import type { PortOwner } from "@agent-runtime/protocol/preview";
import { TunnelClient, type OpHandlers, type TunnelStateChange } from "./tunnel";
import { SIDECAR_VERSION } from "./version";
import { Sandboxes } from "./sandbox/sandboxes";
import { guardHandlers } from "./sandbox/guard";
import { connectInside } from "./sandbox/ingress";
import type { OwnerLimits } from "./sandbox/owner-limits";
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { defaultConfigDir } from "./credentials";

const log = logger("sidecar");

export interface SidecarOptions {
  url: string;
  machine: string;
  token: string;
  /** Where agents are installed and state is kept (default ~/.agent-runtime). */
  dataDir?: string;
  /** Working directory of agent processes (default: the current directory). */
  workdir?: string;
  /** HOME used to find agent credentials and skills folders (default: the user's). */
  home?: string;
  processLimits?: Partial<ProcessLimits>;
  /** Messages kept per ACP server for late or resuming readers. */
  acpBuffer?: { maxEvents?: number; maxBytes?: number };
  onRefused?: (reason: string) => void;
  onReplaced?: () => void;
  /** An agent with no reader and no turn for this long is stopped; its sessions stay resumable (default 30 min; 0: never). */
  agentIdleStopMs?: number;
  /** When the sidecar runs as root: agents that refuse root by default may run (their own check is lifted). */
  allowRootAgents?: boolean;
  /** A Node for agents whose package needs a newer one than the sidecar's (--agent-node). */
  agentNode?: string | null;
  /** The ports the hosted URL may open (`--expose-ports`); none unless given. */
  exposePorts?: ExposedPorts;
  /** The owner's sandbox floor, `--deny` and `--roots` (sidecar/sandbox/owner-limits.ts); none unless given. */
  ownerLimits?: OwnerLimits;
  /** Where the owner's settings and the machine token are kept (hidden from every sandboxed agent). */
  configDir?: string;
  /** Tunnel heartbeat and reconnect spread (defaults in packages/protocol/src/limits.ts). */
  heartbeatMs?: number;
  reconnectSpreadMs?: number;
}

/** AGENT_IDLE_STOP_MS's default: an agent process nobody reads and that runs no turn is stopped after 30 minutes. */
export const DEFAULT_AGENT_IDLE_STOP_MS = 30 * 60_000;

/** Where agents are installed and the sidecar keeps its state, unless told otherwise. */
export function defaultDataDir(): string {
  return join(homedir(), ".agent-runtime");
}

export class Sidecar {
  readonly processes: ProcessManager;
  readonly acp: AcpServers;
  readonly installer: Installer;
  private readonly teamAgents: TeamAgents;
  readonly agents: AgentCatalog;
  readonly logins: AgentLogins;
  readonly tunnel: TunnelClient;
  readonly skills: SkillsApplier;
  readonly files: MachineFiles;
  readonly mcp: McpApplier;
  readonly directories: DirectoryConfig;
  readonly checkpoints: Checkpoints;
  private readonly worktrees: Worktrees;
  private readonly checks: Checks;
  private readonly dataDir: string;
  private readonly exposed: ExposedPorts;
  /** The tunnel's watch of what listens, told what each list read showed (port-watch.ts). */
  private readonly portWatch = new PortWatch();
  readonly sandboxes: Sandboxes;
  private status: SidecarStatus;
  private statusWrites: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(readonly options: SidecarOptions) {
    const dataDir = options.dataDir ?? defaultDataDir();
    this.dataDir = dataDir;
    this.exposed = options.exposePorts ?? ExposedPorts.NONE;
    this.status = {
      pid: process.pid,
      url: options.url,
      machine: options.machine,
      sidecarVersion: SIDECAR_VERSION,
      state: "connecting",
      sinceMs: Date.now(),
      lastError: null,
      upgrade: null,
    };
    const workdir = options.workdir ?? process.cwd();
    const home = options.home ?? homedir();
    this.sandboxes = new Sandboxes({
      ...(options.ownerLimits ? { limits: options.ownerLimits } : {}),
      home,
      dataDir,
      configDir: options.configDir ?? defaultConfigDir(),
    });
    const children = new ChildRegistry(dataDir);
    children.reapLeftovers();
    this.processes = new ProcessManager({ ...DEFAULT_PROCESS_LIMITS, ...options.processLimits }, children);
    this.installer = new Installer(dataDir, this.processes, undefined, { agentNode: options.agentNode ?? null });
    this.teamAgents = new TeamAgents(this.installer, dataDir, () => this.installedOne());
    const agentValues = new AgentValues(dataDir);
    // Every agent process gets the values kept to log it in (sidecar/logins/), and only its own.
    const launcher = withAgentValues(
      createLauncher(this.installer, {
        workdir,
        dataDir,
        allowRootAgents: options.allowRootAgents ?? false,
        teamEnv: (agent) => this.teamAgents.envFor(agent),
      }),
      agentValues,
    );
    const isInstalled = async (agent: AgentId) => (await this.installer.installed(agent)) !== null;
    const skillsTargets = () => installedSkillsDirs(isInstalled);
    this.files = new MachineFiles(dataDir, home);
    this.directories = new DirectoryConfig(dataDir, this.processes, skillsTargets, (path) => this.files.resolvePath(path));
    this.checkpoints = new Checkpoints(dataDir);
    this.worktrees = new Worktrees(dataDir);
    this.checks = new Checks(children, this.sandboxes);
    void this.checkpoints.sweep().catch((err: unknown) => log.warn(`could not sweep old checkpoints: ${String(err)}`));
    this.acp = new AcpServers(
      this.processes,
      launcher,
      {
        maxEvents: options.acpBuffer?.maxEvents ?? LIMITS.acpBufferEvents,
        maxBytes: options.acpBuffer?.maxBytes ?? LIMITS.acpBufferBytes,
        endedKept: 64,
        endedKeptMs: 120_000,
        idleStopMs: options.agentIdleStopMs ?? DEFAULT_AGENT_IDLE_STOP_MS,
      },
      (cwd) => this.directories.mcpServersFor(cwd),
      new SessionHooks(this.checkpoints, this.worktrees),
      this.sandboxes,
    );
    this.skills = new SkillsApplier(dataDir, home, this.processes, skillsTargets);
    this.mcp = new McpApplier(dataDir, home, () => installedMcpTargets(isInstalled));
    this.agents = new AgentCatalog(this.installer, this.acp, this.processes, launcher, home, dataDir, process.env, (agent) =>
      this.sandboxes.enclosure(`probe-${agent}`, undefined),
    );
    this.logins = new AgentLogins(this.processes, launcher, agentValues, dataDir, (agent) => this.sandboxes.enclosure(`login-${agent}`, undefined));
    this.acp.loginObserved = (agent, loggedIn) => this.logins.observed(agent, loggedIn);
    // The worker reads an agent's login again when its own flow asks a person something or ends.
    this.logins.flows.onChange = (agent) => this.tunnel.tell({ t: "login", agent });
    this.tunnel = new TunnelClient({
      url: options.url,
      machine: options.machine,
      token: options.token,
      sidecarVersion: SIDECAR_VERSION,
      handlers: this.handlers(),
      uploadWindow: UPLOAD_WINDOW,
      streams: this.streams(),
      previews: (send) =>
        new PreviewProxy(this.exposed, send, {
          inside: async (port) => {
            const socket = await this.sandboxes.inside(port);
            return socket ? () => connectInside(socket, port) : null;
          },
        }),
      watchPorts: (changed) => this.portWatch.watch(changed),
      sandbox: () => this.sandboxes.describe(),
      ...(options.onRefused ? { onRefused: options.onRefused } : {}),
      ...(options.onReplaced ? { onReplaced: options.onReplaced } : {}),
      onState: (change) => this.recordState(change),
      ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
      ...(options.reconnectSpreadMs !== undefined ? { reconnectSpreadMs: options.reconnectSpreadMs } : {}),
    });
  }

  /** Keep `agent-runtime-sidecar status` true: the state file changes only when the tunnel's state does. */
  private recordState(change: TunnelStateChange): void {
    const now = Date.now();
    this.status = {
      ...this.status,
      state: change.state,
      sinceMs: change.state === this.status.state ? this.status.sinceMs : now,
      lastError: change.error ? { message: change.error, atMs: now } : this.status.lastError,
      upgrade: change.upgrade !== undefined ? change.upgrade : this.status.upgrade,
      ...sandboxField(this.sandboxes.describe()),
    };
    const snapshot = this.status;
    this.statusWrites = this.statusWrites
      .then(() => writeStatus(this.dataDir, snapshot))
      .catch((err: unknown) => log.warn(`could not write the status file: ${String(err)}`));
  }

  /** Every operation behind the owner's `--deny` and `--roots` (sidecar/sandbox/guard.ts). */
  private handlers(): OpHandlers {
    return guardHandlers(this.ops(), this.sandboxes.limits, (path) => this.files.resolvePath(path));
  }

  private ops(): OpHandlers {
    return {
      "acp.post": (args, { onCancel }) => this.acp.post(args, onCancel),
      "acp.restore": (args) => this.acp.restore(args),
      "acp.discover": ({ agent, cwd }) => this.acp.discover(agent, cwd),
      "acp.delete": async ({ serverId }) => ({ deleted: await this.acp.delete(serverId) }),
      "acp.list": async () => ({ servers: this.acp.list() }),
      "agents.list": async (args) => {
        const list = await this.agents.list(args);
        return { ...list, agents: await Promise.all(list.agents.map(async (a) => ({ ...a, login: await this.logins.cached(a.id) }))) };
      },
      // One agent's info asks it whether it is logged in (once; kept like its version).
      "agents.get": async (args) => {
        const info = await this.agents.get(args.agent, args);
        const login = info.installed ? await this.logins.get(args.agent, args.noCache) : await this.logins.cached(args.agent);
        return { ...info, login, platform: MACHINE_PLATFORM };
      },
      "logins.get": ({ agent, noCache }) => this.logins.get(agent, noCache),
      "logins.start": ({ agent, ...request }) => this.logins.start(agent, request),
      "logins.answer": ({ agent, ...answer }) => this.logins.answer(agent, answer),
      "logins.remove": ({ agent }) => this.logins.remove(agent),
      "agents.install": async ({ agent, request, entry }) => {
        const result = await this.installer.install(agent, request, entry);
        if (!result.already_installed) this.installedOne();
        return result;
      },
      "agents.apply": (args) => this.teamAgents.apply(args),
      "skills.apply": (args) => this.skills.apply(args),
      "mcp.apply": (args) => this.mcp.apply(args),
      ...this.directories.handlers(),
      ...processHandlers(this.processes),
      ...this.files.handlers(),
      ...reviewHandlers(this.checkpoints, this.worktrees, (path) => this.files.resolvePath(path)),
      ...attemptHandlers(this.checks, this.worktrees, join(this.dataDir, "worktrees"), (path) => this.files.resolvePath(path)),
      "ports.list": async () => ({
        ports: await listeningPorts(
          this.portOwners(),
          (port) => this.exposed.allows(port),
          (set) => this.portWatch.shown(set),
        ),
        expose: this.exposed.spec,
      }),
    };
  }

  /** The runtime's own processes by pid: a port one of them (or a child of one) listens on is named after it. */
  private portOwners(): Map<number, PortOwner> {
    const owners = new Map<number, PortOwner>([[process.pid, { kind: "sidecar" }]]);
    const agentProcesses = new Map(this.acp.list().flatMap((server) => (server.processId ? [[server.processId, server.serverId] as const] : [])));
    for (const proc of this.processes.list()) {
      if (proc.pid === null) continue;
      const serverId = agentProcesses.get(proc.id);
      owners.set(proc.pid, serverId ? { kind: "acp", serverId, processId: proc.id } : { kind: "process", processId: proc.id });
    }
    return owners;
  }

  /** A newly installed agent gets the team's skills and MCP servers too. */
  private installedOne(): void {
    void this.skills.reapply();
    void this.mcp.reapply();
  }

  private streams(): StreamResolver {
    return (ref) => {
      if (ref.kind === "logs") return processStream(this.processes, ref.processId);
      const found = this.acp.lookup(ref.serverId);
      if (found) return { log: found.server.log, goneWhenCaughtUp: !found.live };
      // Not started yet: clients open the stream and send the first POST at the same time.
      return { wait: (ready) => this.acp.onCreated((id) => id === ref.serverId && ready()) };
    };
  }

  start(): void {
    log.info(`machine '${this.options.machine}' dialing ${this.options.url}`);
    // The hello says what the machine can enforce: probed first (a few milliseconds).
    void this.sandboxes.ready.then(() => {
      if (!this.stopping) this.tunnel.start();
    });
  }

  /** Close the tunnel and stop every child: nothing is left behind. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.tunnel.stop();
    this.acp.dispose();
    this.checks.stopAll();
    await this.processes.stopAll();
    this.files.dispose();
    if (this.status.state !== "refused" && this.status.state !== "replaced") this.recordState({ state: "stopped" });
    await this.statusWrites;
  }
}

/** The status file's `sandbox`, once the machine's sandbox was probed. */
function sandboxField(sandbox: MachineSandbox | null): { sandbox?: MachineSandbox } {
  return sandbox ? { sandbox } : {};
}
