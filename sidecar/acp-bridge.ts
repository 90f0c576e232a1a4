/**
 * ACP servers: each is one agent process speaking JSON-RPC over stdio, one message a line.
 * A client's request is written to stdin and answered by the agent's response with the same id;
 * everything else the agent writes (notifications, its own requests) goes to the server's
 * sequenced log, read by SSE subscribers. When the process exits, waiting calls fail clearly,
 * the log ends with an `exited` event and the id is free again.
 */
import { z } from "zod";
import { createInterface } from "node:readline";
import type { AcpPostResult, StreamEnd } from "../src/protocol/frames";
import { PendingCalls } from "../src/protocol/pending-calls";
import { ProblemError } from "../src/protocol/problems";
import type { AcpServer as AcpServerInfo, AgentId } from "../src/protocol/resources";
import { EventLog, type EventLogLimits } from "./event-log";
import { logger } from "./log";
import { envAuthMethod } from "./agents/auth";
import { stderrCause } from "./scrub";
import type { ManagedProcess, ProcessManager } from "./processes";

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

/** Is this client message an `initialize` request? (Checked on the text first: most messages are not.) */
function isInitialize(message: string): boolean {
  if (!message.includes('"initialize"')) return false;
  try {
    return (JSON.parse(message) as { method?: unknown }).method === "initialize";
  } catch {
    return false;
  }
}

export class AcpServer {
  readonly createdAtMs = Date.now();
  readonly log: EventLog;
  /** Client requests waiting for the agent's response, by JSON-RPC id (as JSON text). */
  private readonly waiting = new PendingCalls<string, AcpPostResult>();
  private authAttempts = 0;

  constructor(
    readonly serverId: string,
    readonly agent: AgentId,
    readonly process: ManagedProcess,
    limits: EventLogLimits,
  ) {
    this.log = new EventLog(limits);
    const lines = createInterface({ input: process.child.stdout!, crlfDelay: Infinity });
    lines.on("line", (line) => this.onAgentLine(line));
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
    const m = msg as { id?: unknown; method?: unknown; error?: unknown };
    if (m.method === undefined && m.id !== undefined) {
      const key = JSON.stringify(m.id);
      if (this.waiting.has(key) && this.waiting.settle(key, { ok: true, value: { status: 200, body: m.error ? this.withCause(m, line) : line } })) return;
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
   */
  async post(message: string, awaitId: string | number | null, signal?: AbortSignal): Promise<AcpPostResult> {
    if (!this.process.running) throw new ProblemError("agent_process_exited", `the agent process of '${this.serverId}' has exited`);
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
    if (isInitialize(message) && outcome.value.status === 200) await this.authenticateFromEnv(outcome.value.body);
    return outcome.value;
  }

  /**
   * After `initialize`: when the agent offers a login the machine's environment satisfies (an API key),
   * log in now (sidecar/agents/auth.ts), before the client's answer goes back. A failure is logged, and
   * the client can still call `authenticate` itself.
   */
  private async authenticateFromEnv(initializeAnswer: string): Promise<void> {
    let result: unknown;
    try {
      result = (JSON.parse(initializeAnswer) as { result?: unknown }).result;
    } catch {
      return;
    }
    const methodId = envAuthMethod(result, process.env);
    if (!methodId) return;
    const id = `agent-runtime-authenticate-${this.authAttempts++}`;
    const key = JSON.stringify(id);
    const answer = this.waiting.wait(key, undefined, AUTHENTICATE_TIMEOUT_MS);
    await this.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method: "authenticate", params: { methodId } })).catch(() => undefined);
    const outcome = await answer;
    const failed = !outcome.ok
      ? outcome.problem.detail
      : outcome.value.status === 200
        ? (JSON.parse(outcome.value.body) as { error?: { message?: string } }).error?.message
        : undefined;
    if (failed) log.warn(`${this.serverId}: logging in with '${methodId}' failed: ${failed}`);
    else log.info(`${this.serverId}: logged in with '${methodId}' from the environment`);
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
}

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

  constructor(
    private readonly processes: ProcessManager,
    private readonly launch: AgentLauncher,
    private readonly limits: AcpLimits,
    /** MCP servers configured for a folder (sidecar/directory-config.ts): added to every session started there. */
    private readonly folderMcpServers: (cwd: string) => Promise<{ name: string }[]> = async () => [],
  ) {}

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

  async post(serverId: string, agent: AgentId | undefined, message: string, awaitId: string | number | null, signal?: AbortSignal): Promise<AcpPostResult> {
    const server = await this.serverFor(serverId, agent);
    return server.post(await this.withFolderMcpServers(message), awaitId, signal);
  }

  /**
   * A `session/new` or `session/load` for a folder with MCP entries gets them added to its `mcpServers`
   * (the client's own come first and win on a name). Any other message passes untouched, unparsed.
   */
  private async withFolderMcpServers(message: string): Promise<string> {
    if (!message.includes('"session/new"') && !message.includes('"session/load"')) return message;
    let value: unknown;
    try {
      value = JSON.parse(message);
    } catch {
      return message;
    }
    const parsed = SessionStart.safeParse(value);
    if (!parsed.success) return message;
    const { params } = parsed.data;
    const extra = await this.folderMcpServers(params.cwd);
    if (extra.length === 0) return message;
    const named = new Set(params.mcpServers.map((s) => s.name));
    const added = extra.filter((s) => !named.has(s.name));
    return JSON.stringify({ ...parsed.data, params: { ...params, mcpServers: [...params.mcpServers, ...added] } });
  }

  private async serverFor(serverId: string, agent: AgentId | undefined): Promise<AcpServer> {
    const existing = this.live.get(serverId) ?? (await this.starting.get(serverId));
    if (existing?.process.running) {
      if (agent && agent !== existing.agent) {
        throw new ProblemError("conflict", `server '${serverId}' runs agent '${existing.agent}', not '${agent}'`);
      }
      return existing;
    }
    if (!agent) {
      throw new ProblemError("invalid_request", `server '${serverId}' is not running: the first POST must name its agent with ?agent=<id>`);
    }
    const starting = this.start(serverId, agent);
    this.starting.set(serverId, starting);
    try {
      return await starting;
    } finally {
      this.starting.delete(serverId);
    }
  }

  private async start(serverId: string, agent: AgentId): Promise<AcpServer> {
    const proc = await spawnAgentProcess(this.processes, await this.launch(agent), `acp:${serverId}`).catch((err: unknown) => {
      // The agent is installed but its process cannot start: the upstream of this relay is broken (502),
      // as sandbox-agent answers it. A full machine stays a 429.
      if (err instanceof ProblemError && err.code !== "too_many_processes") {
        throw new ProblemError("stream_error", `failed to start the agent process of '${agent}': ${err.message}`);
      }
      throw err;
    });
    const server = new AcpServer(serverId, agent, proc, this.limits);
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
      json: JSON.stringify({ serverId: server.serverId, agent: server.agent, processId: server.process.info.id, exitCode, signal }),
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
