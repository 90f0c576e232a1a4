/**
 * Every process the runtime starts goes through here: API spawns (`owner: "user"`), ACP agent
 * processes and installs (`owner: "system"`). Nothing is started without being tracked, and
 * nothing tracked outlives the sidecar (stopAll on shutdown).
 */
import { isUtf8 } from "node:buffer";
import { spawn, type ChildProcess } from "node:child_process";
import { access, constants as fsConstants, stat } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { spawn as spawnPty, type IPty } from "@lydell/node-pty";
import { LogEntry, type ProcessConfig, type ProcessLogEnd } from "@agent-runtime/protocol/processes";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { Process } from "@agent-runtime/protocol/processes";
import { EventLog } from "../streams/event-log";
import { onPtyOutput } from "./pty-output";
import type { ChildRegistry } from "../orphans";
import { errnoCode, errorText, logger } from "../log";

const log = logger("process");

/** The limits a machine enforces, named as the API names them (`/v1/processes/config`). */
export type ProcessLimits = ProcessConfig;

export const DEFAULT_PROCESS_LIMITS: ProcessLimits = {
  maxConcurrentProcesses: 64,
  maxExitedKept: 256,
  maxLogBytesPerProcess: 4 * 1024 * 1024,
  maxInputBytesPerRequest: 1024 * 1024,
  maxOutputBytes: 1024 * 1024,
  defaultRunTimeoutMs: 60_000,
  maxRunTimeoutMs: 60 * 60_000,
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

/** A process runs either on pipes (stdin/stdout/stderr) or on a pseudo-terminal (one output stream). */
type Backend = { kind: "pipe"; child: ChildProcess } | { kind: "pty"; pty: IPty };

export class ManagedProcess {
  readonly info: Process;
  readonly output: EventLog;
  readonly exited: Promise<void>;
  private markExited!: () => void;
  private readonly pieceSize: number;

  constructor(
    private readonly backend: Backend,
    options: SpawnOptions,
    id: string,
    maxLogBytes: number,
  ) {
    const pid = backend.kind === "pipe" ? backend.child.pid : backend.pty.pid;
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
      pid: pid ?? null,
      exitCode: null,
      signal: null,
      exitedAtMs: null,
      ...(options.label ? { label: options.label } : {}),
    };
    this.output = new EventLog({ maxEvents: Number.MAX_SAFE_INTEGER, maxBytes: maxLogBytes });
    this.exited = new Promise((resolve) => (this.markExited = resolve));
    this.pieceSize = Math.max(256, Math.floor(maxLogBytes / 4));
    if (backend.kind === "pty") {
      onPtyOutput(backend.pty, (text) => this.recordText("pty", text));
    } else {
      if (!options.rawStdout) backend.child.stdout?.on("data", (chunk: Buffer) => this.recordBytes("stdout", chunk));
      backend.child.stderr?.on("data", (chunk: Buffer) => this.recordBytes("stderr", chunk));
    }
  }

  /** The child's pipes, for the runtime's own protocol processes (ACP agents, installs); never a PTY. */
  get child(): ChildProcess {
    if (this.backend.kind !== "pipe") throw new Error(`${this.info.id} runs on a terminal and has no pipes`);
    return this.backend.child;
  }

  write(bytes: Buffer): Promise<void> {
    if (this.backend.kind === "pty") {
      this.backend.pty.write(bytes.toString("utf8"));
      return Promise.resolve();
    }
    const stdin = this.backend.child.stdin!;
    return new Promise((resolve, reject) => stdin.write(bytes, (err) => (err ? reject(err) : resolve())));
  }

  /** A terminal's new size; a process on pipes has none. */
  resize(cols: number, rows: number): void {
    if (this.backend.kind !== "pty") throw new ProblemError("conflict", `process '${this.info.id}' has no terminal (it was not started with tty: true)`);
    if (!this.running) throw new ProblemError("conflict", `process '${this.info.id}' has exited`);
    this.backend.pty.resize(cols, rows);
  }

  /** End of input: closes stdin, or sends EOF (Ctrl-D) on a terminal. */
  endInput(): void {
    if (this.backend.kind === "pty") this.backend.pty.write("\x04");
    else this.backend.child.stdin?.end();
  }

  /**
   * Signal the process's whole group: every child leads its own process group (a terminal's child leads
   * its session), so what it started itself (`sh -c "…; sleep 300"`) goes with it.
   */
  kill(signal: NodeJS.Signals): void {
    if (this.info.pid) signalGroup(this.info.pid, signal);
  }

  /**
   * The one way to stop a process: SIGTERM to its group, SIGKILL to the group after `graceMs` if the
   * leader is still there, and in any case to whatever of the group outlived its leader.
   */
  async terminate(graceMs = 3000): Promise<void> {
    if (this.running) {
      this.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
    }
    this.kill("SIGKILL");
    await this.exited;
  }

  get running(): boolean {
    return this.info.status === "running";
  }

  /** What the process wrote (of what is still kept), as text; one stream or all interleaved. */
  outputText(stream?: LogEntry["stream"]): string {
    return this.output
      .since(0)
      .events.map(([, json]) => logEntryOf(json))
      .filter((entry) => !stream || entry.stream === stream)
      .map((entry) => (entry.encoding === "base64" ? Buffer.from(entry.data, "base64").toString("utf8") : entry.data))
      .join("");
  }

  /** Output is kept in pieces small enough that the byte limit drops old output, never the newest. */
  /** Bytes of a multi-byte character cut by a chunk boundary, per stream, held until the rest comes. */
  private readonly partial: Partial<Record<LogEntry["stream"], Buffer>> = {};

  /**
   * Raw output: what is valid UTF-8 is kept as text, anything else as base64, so binary output survives
   * byte for byte. A character cut by a chunk boundary waits for its last bytes.
   */
  private recordBytes(stream: LogEntry["stream"], chunk: Buffer): void {
    const carried = this.partial[stream];
    const bytes = carried ? Buffer.concat([carried, chunk]) : chunk;
    const cut = incompleteTail(bytes);
    this.partial[stream] = cut ? bytes.subarray(bytes.length - cut) : undefined;
    const body = cut ? bytes.subarray(0, bytes.length - cut) : bytes;
    if (body.length === 0) return;
    if (isUtf8(body)) this.recordText(stream, body.toString("utf8"));
    else this.append(stream, "base64", body.toString("base64"));
  }

  private recordText(stream: LogEntry["stream"], text: string): void {
    for (let i = 0; i < text.length; i += this.pieceSize) this.append(stream, "utf8", text.slice(i, i + this.pieceSize));
  }

  private append(stream: LogEntry["stream"], encoding: LogEntry["encoding"], data: string): void {
    if (this.output.ended) return;
    // The entry carries its own sequence, so a stream passes it through untouched.
    const entry: LogEntry = { sequence: this.output.lastSeq + 1, timestampMs: Date.now(), stream, encoding, data };
    this.output.append(JSON.stringify(entry));
  }

  onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.running) return;
    // Bytes still waiting for the rest of a character never get it: they are kept as they are.
    for (const stream of ["stdout", "stderr"] as const) {
      const rest = this.partial[stream];
      if (rest) this.append(stream, "base64", rest.toString("base64"));
      this.partial[stream] = undefined;
    }
    this.info.status = "exited";
    this.info.exitCode = code;
    this.info.signal = signal;
    this.info.exitedAtMs = Date.now();
    const end: ProcessLogEnd = { id: this.info.id, exitCode: code, signal };
    this.output.end({ code: "exited", json: JSON.stringify(end) });
    this.markExited();
  }
}

export class ProcessManager {
  private readonly processes = new Map<string, ManagedProcess>();
  private counter = 0;

  constructor(
    public limits: ProcessLimits = DEFAULT_PROCESS_LIMITS,
    /** Where children are written down, so a sidecar that was killed outright has its children reaped on restart. */
    private readonly registry?: ChildRegistry,
  ) {}

  /** Ids sort as text in creation order: fixed width, zero-padded. */
  private newId(): string {
    this.counter += 1;
    return `proc_${String(this.counter).padStart(9, "0")}`;
  }

  async spawn(options: SpawnOptions): Promise<ManagedProcess> {
    const running = [...this.processes.values()].filter((p) => p.running).length;
    if (running >= this.limits.maxConcurrentProcesses) {
      throw new ProblemError("too_many_processes", `at most ${this.limits.maxConcurrentProcesses} processes may run at once on this machine`);
    }
    const cwdStat = await stat(options.cwd).catch(() => null);
    if (!cwdStat?.isDirectory()) throw new ProblemError("not_found", `working directory '${options.cwd}' does not exist`);

    const backend = options.tty ? await startPty(options) : await startPipes(options);
    const proc = new ManagedProcess(backend, options, this.newId(), this.limits.maxLogBytesPerProcess);
    this.processes.set(proc.info.id, proc);
    if (proc.info.pid) this.registry?.add(proc.info.pid);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (proc.info.pid && proc.running) this.registry?.remove(proc.info.pid);
      proc.onExit(code, signal);
      log.debug(`${proc.info.id} exited (${signal ?? code})`);
      this.evictExited();
    };
    if (backend.kind === "pty") {
      backend.pty.onExit(({ exitCode, signal }) => (signal ? onExit(null, signalName(signal)) : onExit(exitCode, null)));
    } else {
      const { child } = backend;
      child.on("error", (err) => log.warn(`${proc.info.id} (${options.command}): ${errorText(err)}`));
      child.stdin?.on("error", () => {
        // writing to a child that just exited: its exit is reported by 'exit'
      });
      // 'exit' can come before the last output is read; 'close' comes after. A grandchild holding the
      // pipes open must not hide the exit, so 'close' gets half a second at most.
      child.once("exit", (code, signal) => {
        const timer = setTimeout(() => onExit(code, signal), 500);
        child.once("close", () => {
          clearTimeout(timer);
          onExit(code, signal);
        });
      });
    }
    log.debug(`${proc.info.id} started: ${options.command} ${options.args.join(" ")} (pid ${proc.info.pid})`);
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
    if (proc.running) proc.kill(signal);
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

  /** Terminate everything still running, all at once: nothing the runtime started outlives it. */
  async stopAll(graceMs = 3000): Promise<void> {
    const running = [...this.processes.values()].filter((p) => p.running);
    await Promise.all(running.map((p) => p.terminate(graceMs)));
  }
}

async function startPipes(options: SpawnOptions): Promise<Backend> {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
    shell: false,
    // Its own process group (and session), so that it and everything it starts are stopped together.
    detached: true,
  });
  // A command that cannot be started reports it through 'error' (ENOENT, EACCES), not by throwing.
  const failed = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    child.once("spawn", () => resolve(null));
    child.once("error", (err) => resolve(err));
  });
  if (failed) throw startFailure(options.command, failed.code, failed.message);
  return { kind: "pipe", child };
}

async function startPty(options: SpawnOptions): Promise<Backend> {
  // A terminal reports a missing command only as exit code 1 after the fact: look it up first.
  if (!(await findExecutable(options.command, options.env?.PATH ?? process.env.PATH ?? ""))) throw startFailure(options.command, "ENOENT", "not found");
  try {
    const pty = spawnPty(options.command, options.args, {
      name: "xterm-256color",
      cols: 120,
      rows: 40,
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
    });
    return { kind: "pty", pty };
  } catch (err) {
    throw startFailure(options.command, undefined, errorText(err));
  }
}

/** Signal a process group; a group already gone is fine. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if (errnoCode(err) !== "ESRCH") log.warn(`could not signal process group ${pgid}: ${errorText(err)}`);
  }
}

/** How many bytes at the end of `bytes` begin a UTF-8 character that is not complete yet (0 to 3). */
export function incompleteTail(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back for the lead
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

function startFailure(command: string, code: string | undefined, message: string): ProblemError {
  return code === "ENOENT"
    ? new ProblemError("not_found", `command '${command}' was not found`)
    : new ProblemError("invalid_request", `could not start '${command}': ${message}`);
}

async function findExecutable(command: string, path: string): Promise<boolean> {
  return (await whichExecutable(command, path)) !== null;
}

/** Where `command` runs from: itself when it names a path, else the first executable of that name on `path`. */
export async function whichExecutable(command: string, path: string): Promise<string | null> {
  const candidates = command.includes("/")
    ? [command]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    if (!isAbsolute(candidate) && !command.includes("/")) continue;
    if (
      await access(candidate, fsConstants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return null;
}

function signalName(signal: number): NodeJS.Signals | null {
  return Object.keys(osConstants.signals).find((name): name is NodeJS.Signals => isSignal(name) && osConstants.signals[name] === signal) ?? null;
}

function isSignal(name: string): name is NodeJS.Signals {
  return Object.hasOwn(osConstants.signals, name);
}

/** An entry of a process's output log, as this sidecar wrote it there. */
export function logEntryOf(json: string): LogEntry {
  return LogEntry.parse(JSON.parse(json));
}
