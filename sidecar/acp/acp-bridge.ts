/**
 * ACP servers: each is one agent process speaking JSON-RPC over stdio, one message a line.
 * A client's request is written to stdin and answered by the agent's response with the same id;
 * everything else the agent writes (notifications, its own requests) goes to the server's
 * sequenced log, read by SSE subscribers. When the process exits, waiting calls fail clearly,
 * the log ends with an `exited` event and the id is free again.
 */
import { agentCapabilitiesOf } from "@agent-runtime/protocol/acp-meaning";
import { z } from "zod";
import { createInterface } from "node:readline";
import type { StreamEnd } from "@agent-runtime/protocol/frames";
import type { AcpPostResult, AcpRestoreArgs, AcpRestoreResult } from "@agent-runtime/protocol/ops/acp";
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import { PendingCalls } from "@agent-runtime/protocol/pending-calls";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { AcpServer as AcpServerInfo } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import { EventLog, type EventLogLimits } from "../streams/event-log";
import { logger } from "../log";
import { envAuthMethod } from "../agents/auth";
import { stderrCause } from "../scrub";
import type { ManagedProcess, ProcessManager } from "../processes/processes";

const log = logger("acp");

export interface AgentLaunch {
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd: string;
}

/** How the bridge gets a command line for an agent (the agent registry answers this). */
export type AgentLauncher = (agent: AgentId) => Promise<AgentLaunch>;

/** An agent's ACP process: tracked as the runtime's own, stdin open, stdout read as protocol (not logged). */
export function spawnAgentProcess(processes: ProcessManager, launch: AgentLaunch, label: string): Promise<ManagedProcess> {
  return processes.spawn({
    command: launch.command,
    args: launch.args,
    cwd: launch.cwd,
    ...(launch.env ? { env: launch.env } : {}),
    owner: "system",
    interactive: true,
    tty: false,
    label,
    rawStdout: true,
  });
}

const AUTHENTICATE_TIMEOUT_MS = 30_000;
/** How long the runtime's own requests to an agent may take (reattaching a long session replays all of it). */
const RUNTIME_REQUEST_TIMEOUT_MS = 120_000;

/** What the runtime reads of an agent's answer line: a JSON object, parsed once when it arrives. */
type AgentAnswer = { result?: unknown; error?: unknown };

export class AcpServer {
  readonly createdAtMs = Date.now();
  readonly log: EventLog;
  /** Client requests waiting for the agent's response, by JSON-RPC id (as JSON text): the answer, and the message parsed once. */
  private readonly waiting = new PendingCalls<string, { answer: AcpPostResult; message: AgentAnswer }>();
  private runtimeRequests = 0;
  /** When a client or the agent last said anything: the idle stop counts from here. */
  lastActivityMs = Date.now();
  /** Stopped by the runtime for being idle (its exit says so). */
  stoppedIdle = false;
  /** Sessions being reattached with `session/load`: their replayed history is not logged again (readers had it). */
  private readonly replaying = new Set<string>();

  constructor(
    readonly serverId: string,
    readonly agent: AgentId,
    readonly process: ManagedProcess,
    limits: EventLogLimits,
    firstSeq = 1,
  ) {
    this.log = new EventLog(limits, firstSeq);
    const lines = createInterface({ input: process.child.stdout!, crlfDelay: Infinity });
    lines.on("line", (line) => this.onAgentLine(line));
  }

  /** A turn (or any client request) is waiting for the agent. */
  get busy(): boolean {
    return this.waiting.size > 0;
  }

  info(): AcpServerInfo {
    return { serverId: this.serverId, agent: this.agent, createdAtMs: this.createdAtMs, processId: this.process.info.id };
  }

  private onAgentLine(raw: string): void {
    const line = raw.trim();
    if (!line) return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      log.warn(`${this.serverId}: agent wrote a line that is not JSON; ignored: ${line.slice(0, 120)}`);
      return;
    }
    if (typeof msg !== "object" || msg === null) return;
    this.lastActivityMs = Date.now();
    const m = msg as AgentAnswer & { id?: unknown; method?: unknown; params?: { sessionId?: unknown } };
    if (m.method === "session/update" && this.replaying.size > 0 && this.replaying.has(String(m.params?.sessionId))) return;
    if (m.method === undefined && m.id !== undefined) {
      const key = JSON.stringify(m.id);
      // `afterSeq`: what the agent wrote before this answer, so a reader can deliver the answer after it.
      const answer = { status: 200 as const, body: m.error ? this.withCause(m, line) : line, afterSeq: this.log.lastSeq };
      if (this.waiting.has(key) && this.waiting.settle(key, { ok: true, value: { answer, message: m } })) return;
    }
    this.log.append(line);
  }

  /**
   * An agent's error answer often says only "Internal error" while the cause went to its stderr: the
   * caller gets the last lines of it, secrets removed, as `error.data.agentStderr`.
   */
  private withCause(message: { error?: unknown }, line: string): string {
    const cause = stderrCause(this.process.outputText("stderr"));
    const error = message.error;
    if (!cause || typeof error !== "object" || error === null || Array.isArray(error)) return line;
    const data = (error as { data?: unknown }).data;
    if (data !== undefined && (typeof data !== "object" || data === null || Array.isArray(data))) return line;
    return JSON.stringify({ ...message, error: { ...error, data: { ...(data as object | undefined), agentStderr: cause } } });
  }

  /**
   * Write one client message; for a request, resolve with the agent's response. `signal` is the
   * worker giving up (a deadline): the request stops waiting and its id is free for a retry.
   * `initialize`: the message is the client's `initialize` (the worker parsed it and said so).
   */
  async post(message: string, awaitId: string | number | null, signal?: AbortSignal, initialize = false): Promise<AcpPostResult> {
    if (!this.process.running) throw new ProblemError("agent_process_exited", `the agent process of '${this.serverId}' has exited`);
    this.lastActivityMs = Date.now();
    if (awaitId === null) {
      await this.writeLine(message);
      return { status: 202 };
    }
    const key = JSON.stringify(awaitId); // the same key the agent's response line is looked up by
    if (this.waiting.has(key)) throw new ProblemError("conflict", `a request with id ${key} is already waiting for its answer on '${this.serverId}'`);
    const answer = this.waiting.wait(key, undefined, null);
    signal?.addEventListener(
      "abort",
      () => this.waiting.settle(key, { ok: false, problem: { code: "timeout", detail: `the caller stopped waiting for request ${key}` } }),
      { once: true },
    );
    try {
      await this.writeLine(message);
    } catch (err) {
      this.waiting.settle(key, { ok: false, problem: (err as ProblemError).toInit() });
    }
    const outcome = await answer;
    if (!outcome.ok) throw new ProblemError(outcome.problem.code, outcome.problem.detail, outcome.problem.extensions);
    // After `initialize`: when the agent offers a login the machine's environment satisfies (an API key), log
    // in now, before the client's answer goes back (a failure is logged; the client can still authenticate).
    if (initialize) await this.logInFromEnv(outcome.value.message.result);
    return outcome.value.answer;
  }

  /** Log in with the method of the agent's `initialize` result the machine's environment satisfies, if any (sidecar/agents/auth.ts). */
  async logInFromEnv(initializeResult: unknown): Promise<void> {
    const methodId = envAuthMethod(initializeResult, process.env);
    if (!methodId) return;
    try {
      await this.request("authenticate", { methodId }, AUTHENTICATE_TIMEOUT_MS);
      log.info(`${this.serverId}: logged in with '${methodId}' from the environment`);
    } catch (err) {
      log.warn(`${this.serverId}: logging in with '${methodId}' failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * A request of the runtime's own to the agent (reattaching sessions, logging in): its result, or a
   * thrown problem carrying the agent's error message.
   */
  async request(method: string, params: unknown, timeoutMs = RUNTIME_REQUEST_TIMEOUT_MS): Promise<unknown> {
    const id = `agent-runtime-${this.runtimeRequests++}`;
    const key = JSON.stringify(id);
    const answer = this.waiting.wait(key, undefined, timeoutMs);
    await this.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method, params })).catch((err: unknown) =>
      this.waiting.settle(key, { ok: false, problem: (err as ProblemError).toInit() }),
    );
    const outcome = await answer;
    if (!outcome.ok) throw new ProblemError(outcome.problem.code, outcome.problem.detail, outcome.problem.extensions);
    const { message } = outcome.value;
    if (message.error) {
      const cause = stderrCause(this.process.outputText("stderr"));
      const said =
        typeof message.error === "object" && message.error !== null && "message" in message.error ? String(message.error.message) : "the agent refused it";
      throw new ProblemError("stream_error", `${method}: ${said}${cause ? ` (its stderr: ${cause})` : ""}`);
    }
    return message.result;
  }

  /** Reattach one session of this agent: resume where the agent can (no replay), else load without logging the replay. */
  async reattach(session: AcpRestoreArgs["sessions"][number], can: { resume: boolean; load: boolean }): Promise<AcpRestoreResult["sessions"][number]> {
    const params = { sessionId: session.sessionId, cwd: session.cwd, mcpServers: session.mcpServers };
    try {
      if (can.resume) {
        await this.request("session/resume", params);
        return { sessionId: session.sessionId, how: "resume" };
      }
      if (can.load) {
        this.replaying.add(session.sessionId);
        try {
          await this.request("session/load", params);
        } finally {
          this.replaying.delete(session.sessionId);
        }
        return { sessionId: session.sessionId, how: "load" };
      }
      return { sessionId: session.sessionId, how: "none", error: `agent '${this.agent}' can neither resume nor load a session` };
    } catch (err) {
      return { sessionId: session.sessionId, how: "none", error: err instanceof Error ? err.message : String(err) };
    }
  }

  /** One line to the agent's stdin, resolved once it is handed to the OS: a slow agent slows its callers, not our memory. */
  private writeLine(message: string): Promise<void> {
    const stdin = this.process.child.stdin!;
    return new Promise((resolve, reject) =>
      stdin.write(`${message}\n`, (err) =>
        err ? reject(new ProblemError("agent_process_exited", `could not write to the agent of '${this.serverId}': ${err.message}`)) : resolve(),
      ),
    );
  }

  /** The process is gone: fail every waiting call and close the stream. */
  finish(end: StreamEnd, reason: ProblemError): void {
    this.waiting.settleAll(() => ({ ok: false, problem: reason.toInit() }));
    this.log.end(end);
  }
}

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

  constructor(
    private readonly processes: ProcessManager,
    private readonly launch: AgentLauncher,
    private readonly limits: AcpLimits,
    /** MCP servers configured for a folder (sidecar/config/directory-config.ts): added to every session started there. */
    private readonly folderMcpServers: (cwd: string) => Promise<{ name: string }[]> = async () => [],
  ) {
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
  async post(args: OpArgs<"acp.post">, signal?: AbortSignal): Promise<AcpPostResult> {
    const { serverId, agent, awaitId, firstSeq, method, cwd } = args;
    // Another message is bringing this server's agent back (a restore): this one waits for it, so that it
    // never reaches a process that is not initialized yet, nor a session not reattached yet.
    await this.restoring.get(serverId)?.catch(() => undefined);
    const server = await this.serverFor(serverId, agent, firstSeq);
    const sessionStart = (method === "session/new" || method === "session/load") && cwd !== undefined;
    const message = sessionStart ? await this.withFolderMcpServers(args.message, cwd) : args.message;
    return server.post(message, awaitId, signal, method === "initialize");
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
    const server = await this.serverFor(args.serverId, args.agent, args.firstSeq);
    const initialized = await server.request("initialize", args.initialize);
    await server.logInFromEnv(initialized);
    if (args.authMethodId) await server.request("authenticate", { methodId: args.authMethodId });
    const can = agentCapabilitiesOf(initialized);
    const sessions: AcpRestoreResult["sessions"] = [];
    for (const session of args.sessions) {
      const mcpServers = await this.mergedMcpServers(session.cwd, session.mcpServers as { name: string }[]);
      sessions.push(await server.reattach({ ...session, mcpServers }, can));
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
    const proc = await spawnAgentProcess(this.processes, await this.launch(agent), `acp:${serverId}`);
    const server = new AcpServer(serverId, agent, proc, { maxEvents: 100, maxBytes: 1024 * 1024 });
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
    let value: unknown;
    try {
      value = JSON.parse(message);
    } catch {
      return message;
    }
    const parsed = SessionStart.safeParse(value);
    if (!parsed.success) return message;
    const { params } = parsed.data;
    const mcpServers = await this.mergedMcpServers(params.cwd, params.mcpServers);
    if (mcpServers === params.mcpServers) return message;
    return JSON.stringify({ ...parsed.data, params: { ...params, mcpServers } });
  }

  /** A session's MCP servers with the folder's added (the client's own come first and win on a name); the same array when none. */
  private async mergedMcpServers<S extends { name: string }>(cwd: string, servers: S[]): Promise<(S | { name: string })[]> {
    const extra = await this.folderMcpServers(cwd);
    if (extra.length === 0) return servers;
    const named = new Set(servers.map((s) => s.name));
    return [...servers, ...extra.filter((s) => !named.has(s.name))];
  }

  private async serverFor(serverId: string, agent: AgentId | undefined, firstSeq?: number): Promise<AcpServer> {
    const existing = this.live.get(serverId) ?? (await this.starting.get(serverId));
    if (existing?.process.running) {
      if (agent && agent !== existing.agent) {
        throw new ProblemError("conflict", `server '${serverId}' runs agent '${existing.agent}', not '${agent}'`);
      }
      return existing;
    }
    if (!agent) {
      // `notRunning` tells the machine's object it may start the agent again for a recorded session.
      throw new ProblemError("invalid_request", `server '${serverId}' is not running: the first POST must name its agent with ?agent=<id>`, {
        notRunning: true,
      });
    }
    const starting = this.start(serverId, agent, firstSeq);
    this.starting.set(serverId, starting);
    try {
      return await starting;
    } finally {
      this.starting.delete(serverId);
    }
  }

  private async start(serverId: string, agent: AgentId, firstSeq = 1): Promise<AcpServer> {
    const proc = await spawnAgentProcess(this.processes, await this.launch(agent), `acp:${serverId}`).catch((err: unknown) => {
      // The agent is installed but its process cannot start: the upstream of this relay is broken (502),
      // as sandbox-agent answers it. A full machine stays a 429.
      if (err instanceof ProblemError && err.code !== "too_many_processes") {
        throw new ProblemError("stream_error", `failed to start the agent process of '${agent}': ${err.message}`);
      }
      throw err;
    });
    // Numbered on from what an earlier process of this server sent, so readers' Last-Event-IDs stay valid.
    const earlier = this.ended.get(serverId)?.log.lastSeq ?? 0;
    const server = new AcpServer(serverId, agent, proc, this.limits, Math.max(firstSeq, earlier + 1));
    this.ended.delete(serverId);
    this.live.set(serverId, server);
    log.info(`${serverId}: started agent '${agent}' (${proc.info.id}, pid ${proc.info.pid})`);
    void proc.exited.then(() => this.onExit(server));
    for (const listener of this.createdListeners) listener(serverId);
    return server;
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
