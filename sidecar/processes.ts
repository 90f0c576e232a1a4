/**
 * Every process the runtime starts goes through here: API spawns (`owner: "user"`), ACP agent
 * processes and installs (`owner: "system"`). Nothing is started without being tracked, and
 * nothing tracked outlives the sidecar (stopAll on shutdown).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { stat } from "node:fs/promises";
import type { LogEntry } from "../src/protocol/resources";
import { ProblemError } from "../src/protocol/problems";
import type { Process } from "../src/protocol/resources";
import { EventLog } from "./event-log";
import { errorText, logger } from "./log";

const log = logger("process");

export interface ProcessLimits {
  maxRunning: number;
  maxExitedKept: number;
  maxLogBytes: number;
  maxInputBytes: number;
}

export const DEFAULT_PROCESS_LIMITS: ProcessLimits = {
  maxRunning: 64,
  maxExitedKept: 256,
  maxLogBytes: 4 * 1024 * 1024,
  maxInputBytes: 1024 * 1024,
};

export interface SpawnOptions {
  command: string;
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  owner: "user" | "system";
  interactive: boolean;
  tty: boolean;
  label?: string;
  /** stdout is a protocol (ACP), read by the caller: keep it out of the log. */
  rawStdout?: boolean;
}

export class ManagedProcess {
  readonly info: Process;
  readonly output: EventLog;
  readonly exited: Promise<void>;
  private markExited!: () => void;

  constructor(
    readonly child: ChildProcess,
    options: SpawnOptions,
    id: string,
    maxLogBytes: number,
  ) {
    this.info = {
      id,
      command: options.command,
      args: options.args,
      createdAtMs: Date.now(),
      interactive: options.interactive,
      tty: options.tty,
      owner: options.owner,
      status: "running",
      cwd: options.cwd,
      pid: child.pid ?? null,
      exitCode: null,
      signal: null,
      exitedAtMs: null,
      ...(options.label ? { label: options.label } : {}),
    };
    this.output = new EventLog({ maxEvents: Number.MAX_SAFE_INTEGER, maxBytes: maxLogBytes });
    this.exited = new Promise((resolve) => (this.markExited = resolve));
    if (!options.rawStdout) child.stdout?.on("data", (chunk: Buffer) => this.record("stdout", chunk));
    child.stderr?.on("data", (chunk: Buffer) => this.record("stderr", chunk));
  }

  get running(): boolean {
    return this.info.status === "running";
  }

  private record(stream: LogEntry["stream"], chunk: Buffer): void {
    if (this.output.ended) return;
    const entry: Omit<LogEntry, "seq"> = { stream, atMs: Date.now(), data: chunk.toString("utf8") };
    this.output.append(JSON.stringify(entry));
  }

  onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.running) return;
    this.info.status = "exited";
    this.info.exitCode = code;
    this.info.signal = signal;
    this.info.exitedAtMs = Date.now();
    this.output.end({ code: "exited", json: JSON.stringify({ id: this.info.id, exitCode: code, signal }) });
    this.markExited();
  }
}

export class ProcessManager {
  private readonly processes = new Map<string, ManagedProcess>();
  private counter = 0;

  constructor(readonly limits: ProcessLimits = DEFAULT_PROCESS_LIMITS) {}

  /** Ids sort as text in creation order: fixed width, zero-padded. */
  private newId(): string {
    this.counter += 1;
    return `proc_${String(this.counter).padStart(9, "0")}`;
  }

  async spawn(options: SpawnOptions): Promise<ManagedProcess> {
    const running = [...this.processes.values()].filter((p) => p.running).length;
    if (running >= this.limits.maxRunning) {
      throw new ProblemError("too_many_processes", `at most ${this.limits.maxRunning} processes may run at once on this machine`);
    }
    const cwdStat = await stat(options.cwd).catch(() => null);
    if (!cwdStat?.isDirectory()) throw new ProblemError("not_found", `working directory '${options.cwd}' does not exist`);

    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      shell: false,
    });
    // A command that cannot be started reports it through 'error' (ENOENT, EACCES), not by throwing.
    const started = await new Promise<Error | null>((resolve) => {
      child.once("spawn", () => resolve(null));
      child.once("error", (err) => resolve(err));
    });
    if (started) {
      const code = (started as NodeJS.ErrnoException).code;
      throw new ProblemError(
        code === "ENOENT" ? "not_found" : "invalid_request",
        code === "ENOENT" ? `command '${options.command}' was not found` : `could not start '${options.command}': ${started.message}`,
      );
    }
    const proc = new ManagedProcess(child, options, this.newId(), this.limits.maxLogBytes);
    this.processes.set(proc.info.id, proc);
    child.on("error", (err) => log.warn(`${proc.info.id} (${options.command}): ${errorText(err)}`));
    child.stdin?.on("error", () => {
      // writing to a child that just exited: its exit is reported by 'exit'
    });
    child.on("exit", (code, signal) => {
      proc.onExit(code, signal);
      log.debug(`${proc.info.id} exited (${signal ?? code})`);
      this.evictExited();
    });
    log.debug(`${proc.info.id} started: ${options.command} ${options.args.join(" ")} (pid ${child.pid})`);
    return proc;
  }

  get(id: string): ManagedProcess {
    const proc = this.processes.get(id);
    if (!proc) throw new ProblemError("not_found", `no process '${id}'`);
    return proc;
  }

  find(id: string): ManagedProcess | undefined {
    return this.processes.get(id);
  }

  list(): Process[] {
    return [...this.processes.keys()].sort().map((id) => this.processes.get(id)!.info);
  }

  signal(id: string, signal: "SIGTERM" | "SIGKILL"): ManagedProcess {
    const proc = this.get(id);
    if (proc.running) proc.child.kill(signal);
    return proc;
  }

  delete(id: string): boolean {
    const proc = this.processes.get(id);
    if (!proc) return false;
    if (proc.running) throw new ProblemError("conflict", `process '${id}' is still running; stop it first`);
    this.processes.delete(id);
    return true;
  }

  private evictExited(): void {
    const exited = [...this.processes.values()].filter((p) => !p.running);
    for (const proc of exited.slice(0, Math.max(0, exited.length - this.limits.maxExitedKept))) {
      this.processes.delete(proc.info.id);
    }
  }

  /** SIGTERM everything still running, then SIGKILL what did not go within the grace period. */
  async stopAll(graceMs = 3000): Promise<void> {
    const running = [...this.processes.values()].filter((p) => p.running);
    for (const proc of running) proc.child.kill("SIGTERM");
    const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), graceMs).unref());
    await Promise.race([Promise.all(running.map((p) => p.exited)), timeout]);
    for (const proc of running) if (proc.running) proc.child.kill("SIGKILL");
    await Promise.race([Promise.all(running.map((p) => p.exited)), new Promise((r) => setTimeout(r, 1000).unref())]);
  }
}
