/**
 * The ACP servers of one machine, by id (docs/architecture.md, "One call", "Sessions"): started on a
 * client's first message, restored after a restart with the sessions they had, stopped when idle or
 * asked, their sessions discovered. One server (one agent process) is `AcpServer` (acp-server.ts).
 */
import { agentCapabilitiesOf, answerOf } from "@agent-runtime/protocol/acp-meaning";
import { isAuthRequired } from "@agent-runtime/protocol/logins";
import { jsonAs } from "@agent-runtime/protocol/json";
import { z } from "zod";
import type { StreamEnd } from "@agent-runtime/protocol/frames";
import type { AcpPostAnswer, AcpPostResult, AcpRestoreArgs, AcpRestoreResult } from "@agent-runtime/protocol/ops/acp";
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { AcpServer as AcpServerInfo } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { EventLogLimits } from "../streams/event-log";
import { AcpServer, type AgentLaunch, type AgentLauncher, spawnAgentProcess } from "./acp-server";
import { logger } from "../log";
import { stderrCause } from "../scrub";
import type { ManagedProcess, ProcessManager } from "../processes/processes";
import type { Enclosure } from "../sandbox/enclosure";
import type { SessionHooks } from "../review/session-hooks";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import type { Sandboxes } from "../sandbox/sandboxes";
import { remember, widenSandbox } from "./sandboxed-restart";
import { sessionFolderOf } from "../sandbox/guard";

const log = logger("acp");

export { type AgentLaunch, type AgentLauncher, spawnAgentProcess } from "./acp-server";

export interface AcpLimits extends EventLogLimits {
  /** Ended servers kept so a reader can still fetch what it missed, and then learn the end: how many, how long. */
  endedKept: number;
  endedKeptMs: number;
  /** An agent with no reader and no turn for this long is stopped; its sessions stay resumable (0: never). */
  idleStopMs: number;
}

const ListedSessions = z.object({
  sessions: z.array(z.object({ sessionId: z.string(), cwd: z.string(), title: z.string().nullish(), updatedAt: z.string().nullish() }).passthrough()),
  nextCursor: z.string().nullish(),
});

/** The part of a session start the relay reads (the rest of the message is kept as it is). */
const SessionStart = z
  .object({
    method: z.enum(["session/new", "session/load"]),
    params: z.object({ cwd: z.string(), mcpServers: z.array(z.object({ name: z.string() }).passthrough()) }).passthrough(),
  })
  .passthrough();

export class AcpServers {
  private readonly live = new Map<string, AcpServer>();
  private readonly ended = new Map<string, AcpServer>();
  private readonly starting = new Map<string, Promise<AcpServer>>();
  private readonly createdListeners = new Set<(serverId: string) => void>();
  private readonly restoring = new Map<string, Promise<AcpRestoreResult>>();
  private readonly idleTimer: ReturnType<typeof setInterval> | null;
  /** Told what a session start says of its agent's login (sidecar/logins/): refused for want of one, or started. */
  loginObserved: ((agent: AgentId, loggedIn: boolean) => void) | null = null;

  constructor(
    private readonly processes: ProcessManager,
    private readonly launch: AgentLauncher,
    private readonly limits: AcpLimits,
    /** MCP servers configured for a folder (sidecar/config/directory-config.ts): added to every session started there. */
    private readonly folderMcpServers: (cwd: string) => Promise<{ name: string }[]> = async () => [],
    /** Checkpoints around turns and worktrees for sessions that ask (sidecar/review/session-hooks.ts). */
    private readonly hooks: SessionHooks | null = null,
    /** The machine's sandboxes (sidecar/sandbox/sandboxes.ts): every agent process starts inside one. */
    private readonly sandboxes: Sandboxes | null = null,
  ) {
    sandboxes?.onBlock(({ serverId, ...block }) => this.live.get(serverId)?.sandboxBlocked(block));
    const every = Math.min(60_000, Math.max(250, Math.floor(limits.idleStopMs / 4)));
    this.idleTimer = limits.idleStopMs > 0 ? setInterval(() => this.stopIdle(), every) : null;
    this.idleTimer?.unref();
  }

  /**
   * Agent processes are disposable, sessions are not: one that nobody reads and that runs no turn is
   * stopped after `idleStopMs`; the next message for one of its sessions starts it again (restore).
   */
  private stopIdle(): void {
    const now = Date.now();
    for (const server of this.live.values()) {
      if (server.stoppedIdle || server.busy || server.log.readers > 0 || now - server.lastActivityMs < this.limits.idleStopMs) continue;
      log.info(`${server.serverId}: agent '${server.agent}' idle for ${now - server.lastActivityMs} ms with no reader: stopping it`);
      server.stoppedIdle = true;
      void server.process.terminate();
    }
  }

  dispose(): void {
    if (this.idleTimer) clearInterval(this.idleTimer);
  }

  list(): AcpServerInfo[] {
    return [...this.live.values()].map((s) => s.info()).sort((a, b) => a.serverId.localeCompare(b.serverId));
  }

  /** A live server, or a recently ended one (for readers catching up), or nothing. */
  lookup(serverId: string): { server: AcpServer; live: boolean } | null {
    const live = this.live.get(serverId);
    if (live) return { server: live, live: true };
    const ended = this.ended.get(serverId);
    return ended ? { server: ended, live: false } : null;
  }

  onCreated(listener: (serverId: string) => void): () => void {
    this.createdListeners.add(listener);
    return () => this.createdListeners.delete(listener);
  }

  /**
   * A client message, as the worker parsed it (`acp.post`): its method (null for a response) and, for a
   * session start, its cwd; the sidecar reads the message itself only to add a folder's MCP servers.
   */
  async post(args: OpArgs<"acp.post">, onCancel?: (listener: () => void) => void): Promise<AcpPostAnswer> {
    const { serverId, agent, awaitId, firstSeq, method, cwd } = args;
    // Another message is bringing this server's agent back (a restore): this one waits for it, so that it
    // never reaches a process that is not initialized yet, nor a session not reattached yet.
    await this.restoring.get(serverId)?.catch(() => undefined);
    const server = await this.serverFor(serverId, agent, firstSeq, args.sandbox);
    // Said as a result of its own: the machine's object may start the agent again for a recorded session.
    if (!server) return { status: 404, notRunning: true, detail: `server '${serverId}' is not running: the first POST must name its agent with ?agent=<id>` };
    const hooked = this.hooks && awaitId !== null ? await this.hooks.hook(server.agent, method ?? null, args.message) : null;
    const folder = hooked?.cwd ?? cwd;
    const sessionStart = (method === "session/new" || method === "session/load") && folder !== undefined;
    const message = sessionStart ? await this.withFolderMcpServers(hooked?.message ?? args.message, folder) : (hooked?.message ?? args.message);
    let answer: AcpPostResult;
    try {
      // Under `workspace` a session's folder must be writable: an agent started before it knew is started
      // again. The folder is the one the agent is told (the message as sent), whatever else was said of it.
      const told = server.enclosure ? sessionFolderOf(message) : undefined;
      if (told !== undefined && server.enclosure && !server.enclosure.covers(told)) {
        await widenSandbox(server, told, async () => {
          const proc = await this.spawnIn(server.enclosure!, server.agent, server.serverId);
          void proc.exited.then(() => this.exited(server));
          return proc;
        });
      }
      answer = await server.post(message, awaitId, onCancel, method === "initialize");
    } catch (err) {
      await hooked?.failed();
      throw err;
    }
    if (server.enclosure) remember(server, method, message, answer.status === 200 ? answer.body : undefined);
    return this.observed(server.agent, method, hooked ? await hooked.answered(answer) : answer);
  }

  private observed(agent: AgentId, method: string | null | undefined, answer: AcpPostResult): AcpPostResult {
    if (method === "session/new" && answer.status === 200 && this.loginObserved) {
      if (isAuthRequired(answer.body)) this.loginObserved(agent, false);
      else if (answerOf(answer.body).error === undefined) this.loginObserved(agent, true);
    }
    // An agent that starts sessions without a login refuses the turn instead (Claude Code's adapter).
    if (method === "session/prompt" && answer.status === 200 && this.loginObserved && isAuthRequired(answer.body)) this.loginObserved(agent, false);
    return answer;
  }

  /**
   * Start a server's agent again and reattach its sessions, as the client first set it up
   * (docs/architecture.md, "Sessions"). Concurrent restores of one server share one run; a server that
   * is live already is left as it is.
   */
  restore(args: AcpRestoreArgs): Promise<AcpRestoreResult> {
    const running = this.restoring.get(args.serverId);
    if (running) return running;
    const run = this.runRestore(args).finally(() => this.restoring.delete(args.serverId));
    this.restoring.set(args.serverId, run);
    return run;
  }

  private async runRestore(args: AcpRestoreArgs): Promise<AcpRestoreResult> {
    const existing = this.live.get(args.serverId) ?? (await this.starting.get(args.serverId));
    if (existing?.process.running) return { started: false, sessions: [] };
    const folders = args.sessions.map((s) => s.cwd);
    const server = await this.serverFor(args.serverId, args.agent, args.firstSeq, args.sandbox, folders);
    if (server.enclosure) {
      server.setup.initialize = args.initialize;
      server.setup.authMethodId = args.authMethodId;
    }
    const initialized = await server.request("initialize", args.initialize);
    await server.logInFromEnv(initialized);
    if (args.authMethodId) await server.request("authenticate", { methodId: args.authMethodId });
    const can = agentCapabilitiesOf(initialized);
    const sessions: AcpRestoreResult["sessions"] = [];
    for (const session of args.sessions) {
      const mcpServers = await this.mergedMcpServers(session.cwd, session.mcpServers);
      const reattached = await server.reattach({ ...session, mcpServers }, can);
      if (server.enclosure && reattached.how !== "none") server.setup.sessions.set(session.sessionId, { cwd: session.cwd, mcpServers });
      if (reattached.how !== "none") await this.hooks?.reattached(args.agent, session.sessionId, session.cwd);
      sessions.push(reattached);
    }
    log.info(`${args.serverId}: agent '${args.agent}' started again; ${sessions.map((s) => `${s.sessionId}: ${s.how}`).join(", ") || "no sessions"}`);
    return { started: true, sessions };
  }

  /**
   * The sessions an agent keeps on this machine (`session/list`), asked of a process of its own that
   * lives only for the question: a person's live servers are not disturbed.
   */
  async discover(agent: AgentId, cwd: string | undefined): Promise<OpResult<"acp.discover">> {
    const serverId = `discover-${agent}-${Date.now().toString(36)}`;
    // Asked by no team: the owner's floor alone applies.
    const enclosure = this.sandboxes ? await this.sandboxes.enclosure(serverId, undefined) : null;
    if (cwd) enclosure?.addFolder(cwd);
    const launch = await this.launch(agent);
    const proc = enclosure ? await this.spawnIn(enclosure, agent, serverId, launch) : await spawnAgentProcess(this.processes, launch, `acp:${serverId}`);
    void proc.exited.then(() => enclosure?.dispose());
    const server = new AcpServer(serverId, agent, proc, { maxEvents: 100, maxBytes: 1024 * 1024 }, 1, enclosure, launch.env);
    try {
      const initialized = await server.request("initialize", { protocolVersion: 1, clientCapabilities: {} }, 60_000);
      await server.logInFromEnv(initialized);
      if (!agentCapabilitiesOf(initialized).list) return { supported: false, sessions: [] };
      const found: OpResult<"acp.discover">["sessions"] = [];
      let cursor: string | null = null;
      do {
        const page = ListedSessions.parse(await server.request("session/list", { ...(cwd ? { cwd } : {}), ...(cursor ? { cursor } : {}) }, 60_000));
        for (const s of page.sessions) found.push({ sessionId: s.sessionId, cwd: s.cwd, title: s.title ?? null, updatedAt: s.updatedAt ?? null });
        cursor = page.nextCursor ?? null;
      } while (cursor && found.length < 500);
      return { supported: true, sessions: found };
    } finally {
      await proc.terminate();
    }
  }

  /**
   * A `session/new` or `session/load` for a folder with MCP entries gets them added to its `mcpServers`
   * (the client's own come first and win on a name); for a folder without, it passes untouched, unparsed.
   */
  private async withFolderMcpServers(message: string, cwd: string): Promise<string> {
    if ((await this.folderMcpServers(cwd)).length === 0) return message;
    const start = jsonAs(message, SessionStart);
    if (!start) return message;
    const { params } = start;
    const mcpServers = await this.mergedMcpServers(params.cwd, params.mcpServers);
    if (mcpServers === params.mcpServers) return message;
    return JSON.stringify({ ...start, params: { ...params, mcpServers } });
  }

  /** A session's MCP servers with the folder's added (the client's own come first and win on a name); the same array when none. */
  private async mergedMcpServers<S extends { name?: unknown }>(cwd: string, servers: S[]): Promise<(S | { name: string })[]> {
    const extra = await this.folderMcpServers(cwd);
    if (extra.length === 0) return servers;
    const named = new Set(servers.map((s) => s.name));
    return [...servers, ...extra.filter((s) => !named.has(s.name))];
  }

  /** The server's live agent, else its agent started; null when it is not running and no agent is named. */
  private serverFor(serverId: string, agent: AgentId, firstSeq?: number, sandbox?: SandboxSpec, folders?: string[]): Promise<AcpServer>;
  private serverFor(serverId: string, agent: AgentId | undefined, firstSeq?: number, sandbox?: SandboxSpec): Promise<AcpServer | null>;
  private async serverFor(
    serverId: string,
    agent: AgentId | undefined,
    firstSeq?: number,
    sandbox?: SandboxSpec,
    folders: string[] = [],
  ): Promise<AcpServer | null> {
    const existing = this.live.get(serverId) ?? (await this.starting.get(serverId));
    if (existing?.process.running) {
      if (agent && agent !== existing.agent) {
        throw new ProblemError("conflict", `server '${serverId}' runs agent '${existing.agent}', not '${agent}'`);
      }
      return existing;
    }
    if (!agent) return null; // not running, and nothing says which agent to start
    const starting = this.start(serverId, agent, firstSeq, sandbox, folders);
    this.starting.set(serverId, starting);
    try {
      return await starting;
    } finally {
      this.starting.delete(serverId);
    }
  }

  /** An agent's process inside `enclosure`: its launch (read again when not given), wrapped. */
  private async spawnIn(enclosure: Enclosure, agent: AgentId, serverId: string, launch?: AgentLaunch): Promise<ManagedProcess> {
    const proc = await spawnAgentProcess(this.processes, await enclosure.wrap(agent, launch ?? (await this.launch(agent))), `acp:${serverId}`);
    enclosure.started(proc.info.pid);
    return proc;
  }

  private async start(serverId: string, agent: AgentId, firstSeq = 1, sandbox?: SandboxSpec, folders: string[] = []): Promise<AcpServer> {
    // Refused before anything starts when the machine cannot enforce the sandbox in force.
    const enclosure = this.sandboxes ? await this.sandboxes.enclosure(serverId, sandbox) : null;
    for (const folder of folders) enclosure?.addFolder(folder);
    // An agent that is unknown or not installed is refused as such (400, 404), before anything starts.
    const launch = await this.launch(agent).catch(async (err: unknown) => {
      await enclosure?.dispose();
      throw err;
    });
    const spawn = enclosure ? this.spawnIn(enclosure, agent, serverId, launch) : spawnAgentProcess(this.processes, launch, `acp:${serverId}`);
    const proc = await spawn.catch(async (err: unknown) => {
      await enclosure?.dispose();
      // The agent is installed but its process cannot start: the upstream of this relay is broken (502),
      // as sandbox-agent answers it. A full machine stays a 429.
      if (err instanceof ProblemError && err.code !== "too_many_processes") {
        throw new ProblemError("stream_error", `failed to start the agent process of '${agent}': ${err.message}`);
      }
      throw err;
    });
    // Numbered on from what an earlier process of this server sent, so readers' Last-Event-IDs stay valid.
    const earlier = this.ended.get(serverId)?.log.lastSeq ?? 0;
    const server = new AcpServer(serverId, agent, proc, this.limits, Math.max(firstSeq, earlier + 1), enclosure, launch.env);
    this.ended.delete(serverId);
    this.live.set(serverId, server);
    log.info(
      `${serverId}: started agent '${agent}' (${proc.info.id}, pid ${proc.info.pid})${enclosure?.enforced ? ` in a '${enclosure.spec.profile}' sandbox, network ${enclosure.spec.network.mode}` : ""}`,
    );
    // The server ends with its process, unless that process was replaced by one in a wider sandbox.
    void proc.exited.then(() => this.exited(server));
    for (const listener of this.createdListeners) listener(serverId);
    return server;
  }

  /** A process of `server` exited: the server ends when it was its current one (not one replaced). */
  private exited(server: AcpServer): void {
    if (server.process.running) return;
    void server.enclosure?.dispose();
    this.onExit(server);
  }

  private onExit(server: AcpServer): void {
    const { exitCode, signal } = server.process.info;
    const end: StreamEnd = {
      code: "exited",
      json: JSON.stringify({
        serverId: server.serverId,
        agent: server.agent,
        processId: server.process.info.id,
        exitCode,
        signal,
        ...(server.stoppedIdle ? { reason: "idle" } : {}),
      }),
    };
    const stderrTail = stderrCause(server.process.outputText("stderr"));
    server.finish(
      end,
      new ProblemError("agent_process_exited", `the agent process exited (${signal ?? `code ${exitCode}`}) before answering`, {
        exitCode,
        signal,
        ...(stderrTail ? { stderr: stderrTail } : {}),
      }),
    );
    if (this.live.get(server.serverId) === server) this.live.delete(server.serverId);
    this.ended.set(server.serverId, server);
    while (this.ended.size > this.limits.endedKept) this.ended.delete(this.ended.keys().next().value!);
    setTimeout(() => {
      if (this.ended.get(server.serverId) === server) this.ended.delete(server.serverId);
    }, this.limits.endedKeptMs).unref();
    log.info(`${server.serverId}: agent '${server.agent}' exited (${signal ?? `code ${exitCode}`})`);
  }

  /** Stop a server's agent process; resolves when it has exited. Unknown ids are fine (idempotent). */
  async delete(serverId: string): Promise<boolean> {
    const server = this.live.get(serverId);
    if (!server) return false;
    await server.process.terminate();
    return true;
  }
}
