import type { StreamEnd } from "@agent-runtime/protocol/frames";
import type { AcpPostResult, AcpRestoreArgs, AcpRestoreResult } from "@agent-runtime/protocol/ops/acp";
import { PendingCalls } from "@agent-runtime/protocol/pending-calls";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { AcpServer as AcpServerInfo } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import { EventLog, type EventLogLimits } from "../streams/event-log";
import { logger, problemOf } from "../log";
import { envAuthMethod } from "../agents/auth";
import { z } from "zod";

const JsonObject = z.record(z.string(), z.unknown());
import { stderrCause } from "../scrub";
import type { ManagedProcess, ProcessManager } from "../processes/processes";
import type { Enclosure } from "../sandbox/enclosure";
import type { AgentLaunch } from "./agent-launch";
import { onLines } from "./agent-lines";
import { SANDBOX_BLOCKED_METHOD, type SandboxBlocked } from "@agent-runtime/protocol/sandbox";

const log = logger("acp");

export type { AgentLaunch } from "./agent-launch";

/** How a server's agent was set up by its client: said again to a process started anew. */
export interface ServerSetup {
  initialize: unknown;
  authMethodId: string | null;
  sessions: Map<string, { cwd: string; mcpServers: Record<string, unknown>[] }>;
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

  /** What a process started again in a wider sandbox is told again (sidecar/acp/sandboxed-restart.ts). */
  readonly setup: ServerSetup = { initialize: null, authMethodId: null, sessions: new Map() };
  private current: ManagedProcess;

  constructor(
    readonly serverId: string,
    readonly agent: AgentId,
    process: ManagedProcess,
    limits: EventLogLimits,
    firstSeq = 1,
    /** The sandbox this server's agent runs in (sidecar/sandbox/enclosure.ts); null: none asked. */
    readonly enclosure: Enclosure | null = null,
    /** What its launch set in its environment (the team's defaults, the values kept to log it in): its login reads them too. */
    private readonly env: Record<string, string> = {},
  ) {
    this.log = new EventLog(limits, firstSeq);
    this.current = process;
    this.readLines(process);
  }

  /** The agent's process now (another one when it was started again in a wider sandbox). */
  get process(): ManagedProcess {
    return this.current;
  }

  /** Lines of `proc` are this server's only while it is the current process. */
  private readLines(proc: ManagedProcess): void {
    onLines(proc.child.stdout!, (line) => {
      if (this.current === proc) this.onAgentLine(line);
    });
  }

  /** The sandbox refused something: said in the stream, once for each of its sessions, in order with what the agent wrote. */
  sandboxBlocked(block: Omit<SandboxBlocked, "sessionId">): void {
    const sessions = this.setup.sessions.size ? [...this.setup.sessions.keys()] : [undefined];
    for (const sessionId of sessions) {
      this.log.append(JSON.stringify({ jsonrpc: "2.0", method: SANDBOX_BLOCKED_METHOD, params: { ...(sessionId ? { sessionId } : {}), ...block } }));
    }
  }

  /** From now on the server's agent is `proc`; the caller stops the earlier one. */
  replaceProcess(proc: ManagedProcess): ManagedProcess {
    const earlier = this.current;
    this.current = proc;
    this.readLines(proc);
    return earlier;
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
    // Not parsed: this runs for every line an agent writes; each field is checked where it is read.
    const method = "method" in msg ? msg.method : undefined;
    if (method === "session/update" && this.replaying.size > 0) {
      const params = "params" in msg ? msg.params : undefined;
      const sessionId = typeof params === "object" && params !== null && "sessionId" in params ? params.sessionId : undefined;
      if (this.replaying.has(String(sessionId))) return;
    }
    const id = "id" in msg ? msg.id : undefined;
    if (method === undefined && id !== undefined) {
      const key = JSON.stringify(id);
      const m: AgentAnswer = { result: "result" in msg ? msg.result : undefined, error: "error" in msg ? msg.error : undefined };
      // `afterSeq`: what the agent wrote before this answer, so a reader can deliver the answer after it.
      const answer = { status: 200 as const, body: m.error ? this.withCause(msg, line) : line, afterSeq: this.log.lastSeq };
      if (this.waiting.has(key) && this.waiting.settle(key, { ok: true, value: { answer, message: m } })) return;
    }
    this.log.append(line);
  }

  /**
   * An agent's error answer often says only "Internal error" while the cause went to its stderr: the
   * caller gets the last lines of it, secrets removed, as `error.data.agentStderr`.
   */
  private withCause(message: object, line: string): string {
    const cause = stderrCause(this.process.outputText("stderr"));
    const error = JsonObject.safeParse("error" in message ? message.error : undefined).data;
    if (!cause || !error) return line;
    const data = error.data === undefined ? {} : JsonObject.safeParse(error.data).data;
    if (!data) return line;
    return JSON.stringify({ ...message, error: { ...error, data: { ...data, agentStderr: cause } } });
  }

  /**
   * Write one client message; for a request, resolve with the agent's response. `onCancel` tells of the
   * worker giving up (a deadline): the request stops waiting and its id is free for a retry.
   * `initialize`: the message is the client's `initialize` (the worker parsed it and said so).
   */
  async post(message: string, awaitId: string | number | null, onCancel?: (listener: () => void) => void, initialize = false): Promise<AcpPostResult> {
    if (!this.process.running) throw new ProblemError("agent_process_exited", `the agent process of '${this.serverId}' has exited`);
    this.lastActivityMs = Date.now();
    if (awaitId === null) {
      await this.writeLine(message);
      return { status: 202 };
    }
    const key = JSON.stringify(awaitId); // the same key the agent's response line is looked up by
    if (this.waiting.has(key)) throw new ProblemError("conflict", `a request with id ${key} is already waiting for its answer on '${this.serverId}'`);
    const answer = this.waiting.wait(key, undefined, null);
    onCancel?.(() => this.waiting.settle(key, { ok: false, problem: { code: "timeout", detail: `the caller stopped waiting for request ${key}` } }));
    try {
      await this.writeLine(message);
    } catch (err) {
      this.waiting.settle(key, { ok: false, problem: problemOf(err, "writing to the agent") });
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
    const methodId = envAuthMethod(initializeResult, process.env, this.env);
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
      this.waiting.settle(key, { ok: false, problem: problemOf(err, "writing to the agent") }),
    );
    const outcome = await answer;
    if (!outcome.ok) throw new ProblemError(outcome.problem.code, outcome.problem.detail, outcome.problem.extensions);
    const { message } = outcome.value;
    if (message.error) {
      const cause = stderrCause(this.process.outputText("stderr"));
      const error = typeof message.error === "object" && message.error !== null ? message.error : {};
      const said = "message" in error && error.message !== undefined ? String(error.message) : "the agent refused it";
      // The agent's own code rides along: ACP's auth_required (-32000) tells a login is wanted (sidecar/logins/).
      const code = "code" in error && typeof error.code === "number" ? { agentErrorCode: error.code } : {};
      throw new ProblemError("stream_error", `${method}: ${said}${cause ? ` (its stderr: ${cause})` : ""}`, code);
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
