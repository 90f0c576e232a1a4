/** The process operations of the tunnel, over the process manager. */
import { isAbsolute, resolve } from "node:path";
import { homedir } from "node:os";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { ProcessRunRequest, ProcessRunResponse } from "@agent-runtime/protocol/processes";
import { logEntryOf, type ProcessManager } from "./processes";
import type { ResolvedStream } from "../streams/stream-hub";
import type { OpHandlers } from "../tunnel";

type ProcessOp = Extract<keyof OpHandlers, `processes.${string}`>;

/** A relative working folder is taken from HOME; none means the sidecar's own. */
function resolveCwd(cwd: string | undefined): string {
  return cwd ? (isAbsolute(cwd) ? cwd : resolve(homedir(), cwd)) : process.cwd();
}

/** The process operations of the handler table (the sidecar's table adds the others, and must be total). */
export function processHandlers(processes: ProcessManager): Pick<OpHandlers, ProcessOp> {
  return {
    "processes.list": async () => ({ processes: processes.list() }),
    "processes.get": async ({ id }) => processes.get(id).info,
    "processes.spawn": async (req) => {
      const cwd = resolveCwd(req.cwd);
      const proc = await processes.spawn({
        command: req.command,
        args: req.args ?? [],
        cwd,
        ...(req.env ? { env: req.env } : {}),
        owner: "user",
        interactive: req.interactive ?? false,
        tty: req.tty ?? false,
      });
      if (!proc.info.interactive) proc.endInput();
      return proc.info;
    },
    "processes.run": (req, { signal }) => runToEnd(processes, req, signal),
    "processes.resize": async ({ id, cols, rows }) => {
      processes.get(id).resize(cols, rows);
      return { cols, rows };
    },
    "processes.config.get": async () => ({ ...processes.limits }),
    "processes.config.set": async (update) => {
      const next = { ...processes.limits, ...update };
      if (next.defaultRunTimeoutMs > next.maxRunTimeoutMs)
        throw new ProblemError("invalid_request", "defaultRunTimeoutMs must not be larger than maxRunTimeoutMs");
      processes.limits = next;
      return { ...next };
    },
    "processes.input": async ({ id, data, encoding, eof }) => {
      const proc = processes.get(id);
      if (!proc.running) throw new ProblemError("conflict", `process '${id}' has exited`);
      // A terminal always has an input side; a process on pipes only when it asked for one.
      if (!proc.info.interactive && !proc.info.tty) throw new ProblemError("conflict", `process '${id}' was not started with interactive: true`);
      const bytes = Buffer.from(data, encoding);
      if (bytes.length > processes.limits.maxInputBytesPerRequest) {
        throw new ProblemError("payload_too_large", `input is limited to ${processes.limits.maxInputBytesPerRequest} bytes per call`);
      }
      await proc.write(bytes);
      if (eof) proc.endInput();
      return { bytesWritten: bytes.length };
    },
    "processes.signal": async ({ id, signal }) => {
      const proc = processes.signal(id, signal);
      // Answer with the state after the signal took effect, so `stop` reads as exited.
      await Promise.race([proc.exited, new Promise((r) => setTimeout(r, 5000))]);
      return proc.info;
    },
    "processes.delete": async ({ id }) => {
      if (!processes.delete(id)) throw new ProblemError("not_found", `no process '${id}'`);
      return { deleted: true };
    },
    "processes.logs": async ({ id, after, tail, stream }) => {
      const proc = processes.get(id);
      let entries = proc.output.since(after).events.map(([, json]) => logEntryOf(json));
      if (stream && stream !== "combined") entries = entries.filter((entry) => entry.stream === stream);
      if (tail !== undefined) entries = tail === 0 ? [] : entries.slice(-tail);
      return { processId: id, stream: stream ?? "combined", entries, nextSeq: proc.output.lastSeq + 1, droppedThrough: proc.output.droppedThrough };
    },
  };
}

/** What one stream of a run keeps: the first `cap` bytes, and whether there was more. */
class Capture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;
  constructor(private readonly cap: number) {}
  add(chunk: Buffer): void {
    const room = this.cap - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }
  text(): string {
    // A cut in the middle of a character becomes U+FFFD, never an exception.
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/**
 * A one-shot run: spawned like any process (tracked, in its own group, reaped if the sidecar dies),
 * fed `stdin`, stopped as a group at its deadline, answered with its output, then forgotten.
 */
async function runToEnd(processes: ProcessManager, req: ProcessRunRequest, cancelled: AbortSignal): Promise<ProcessRunResponse> {
  const { maxRunTimeoutMs, defaultRunTimeoutMs, maxOutputBytes } = processes.limits;
  if (req.timeoutMs && req.timeoutMs > maxRunTimeoutMs) throw new ProblemError("invalid_request", `timeoutMs is at most ${maxRunTimeoutMs} on this machine`);
  if (req.maxOutputBytes && req.maxOutputBytes > maxOutputBytes)
    throw new ProblemError("invalid_request", `maxOutputBytes is at most ${maxOutputBytes} on this machine`);
  const started = Date.now();
  const proc = await processes.spawn({
    command: req.command,
    args: req.args ?? [],
    cwd: resolveCwd(req.cwd ?? undefined),
    ...(req.env ? { env: req.env } : {}),
    owner: "user",
    interactive: true,
    tty: false,
    label: "run",
    rawStdout: true,
  });
  const cap = req.maxOutputBytes ?? maxOutputBytes;
  const stdout = new Capture(cap);
  const stderr = new Capture(cap);
  proc.child.stdout!.on("data", (chunk: Buffer) => stdout.add(chunk));
  proc.child.stderr!.on("data", (chunk: Buffer | string) => stderr.add(Buffer.from(chunk)));
  if (req.stdin) await proc.write(Buffer.from(req.stdin, "utf8")).catch(() => undefined); // it may not read it
  proc.endInput();
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    void proc.terminate(2000);
  }, req.timeoutMs ?? defaultRunTimeoutMs);
  // The worker gave up waiting (its own deadline): nobody will read the answer, so stop the run now.
  cancelled.addEventListener("abort", () => void proc.terminate(2000), { once: true });
  await proc.exited;
  clearTimeout(deadline);
  processes.delete(proc.info.id);
  return {
    exitCode: timedOut ? null : (proc.info.exitCode ?? null),
    signal: proc.info.signal ?? null,
    stdout: stdout.text(),
    stderr: stderr.text(),
    stdoutTruncated: stdout.truncated,
    stderrTruncated: stderr.truncated,
    timedOut,
    durationMs: Date.now() - started,
  };
}

export function processStream(processes: ProcessManager, id: string): ResolvedStream {
  const proc = processes.find(id);
  return proc ? { log: proc.output } : null;
}
