/**
 * Processes and terminals: starting, listing and reading processes, and a terminal's frames.
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { CONTROL_CHARS } from "./values";
import { resource, strictResource } from "./resource";

export const ProcessStatus = z.enum(["running", "exited"]);
export const ProcessOwner = z.enum(["user", "system"]);

export const Process = resource("Process", {
  id: z.string(),
  command: z.string(),
  args: z.array(z.string()),
  createdAtMs: z.number().int(),
  interactive: z.boolean(),
  tty: z.boolean(),
  owner: ProcessOwner,
  status: ProcessStatus,
  cwd: z.string(),
  pid: z.number().int().nullable(),
  exitCode: z.number().int().nullable().optional(),
  signal: z.string().nullable().optional(),
  exitedAtMs: z.number().int().nullable().optional(),
  label: z.string().optional().describe("what the runtime started it for, e.g. 'acp:my-server'"),
});
export type Process = z.infer<typeof Process>;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name");
/** An argument or environment value: any text but NUL, which no operating system can pass to a process. */
const ProcessText = z
  .string()
  .max(65536)
  .refine((v) => !v.includes("\u0000"), "must not contain NUL bytes");

export const SpawnRequest = z
  .object({
    command: z
      .string()
      .min(1)
      .max(4096)
      .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters"),
    args: z.array(ProcessText).max(1024).optional(),
    cwd: z
      .string()
      .min(1)
      .max(4096)
      .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters")
      .optional(),
    env: z.record(EnvName, ProcessText).optional(),
    tty: z.boolean().optional(),
    interactive: z.boolean().optional(),
  })
  .strict()
  .meta({ id: "SpawnRequest", description: 'Runs `command` with `args` directly (no shell; use ["sh", "-c", …] for one).' });
export type SpawnRequest = z.infer<typeof SpawnRequest>;

/** A one-shot run (`POST /v1/processes/run`): as the sandbox-agent SDK sends it, plus `stdin`. */
export const ProcessRunRequest = z
  .object({
    command: SpawnRequest.shape.command,
    args: SpawnRequest.shape.args,
    cwd: SpawnRequest.shape.cwd.nullable(),
    env: SpawnRequest.shape.env,
    stdin: z
      .string()
      .max(1024 * 1024)
      .optional()
      .describe("written to the process's standard input, which is then closed"),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(24 * 3_600_000)
      .nullable()
      .optional()
      .describe("default and maximum: the machine's /v1/processes/config; the process group is stopped when it passes"),
    maxOutputBytes: z
      .number()
      .int()
      .min(0)
      .max(4 * 1024 * 1024)
      .nullable()
      .optional()
      .describe("per stream; default 1 MiB; what is beyond is not kept"),
  })
  .strict()
  .meta({ id: "ProcessRunRequest", description: "Runs `command` with `args` (no shell) to its end and answers with its output." });
export type ProcessRunRequest = z.infer<typeof ProcessRunRequest>;

export const ProcessRunResponse = resource("ProcessRunResponse", {
  exitCode: z.number().int().nullable().describe("null when it ended by a signal (see `signal`) or timed out"),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  timedOut: z.boolean(),
  durationMs: z.number().int(),
});
export type ProcessRunResponse = z.infer<typeof ProcessRunResponse>;

/** The limits a machine enforces on processes (`/v1/processes/config`), with the sandbox-agent SDK's names. */
export const ProcessConfig = resource("ProcessConfig", {
  maxConcurrentProcesses: z.number().int().min(1).max(10_000),
  maxInputBytesPerRequest: z
    .number()
    .int()
    .min(1)
    .max(8 * 1024 * 1024),
  maxLogBytesPerProcess: z
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024),
  maxOutputBytes: z
    .number()
    .int()
    .min(0)
    .max(4 * 1024 * 1024),
  defaultRunTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(24 * 3_600_000),
  maxRunTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(24 * 3_600_000),
  maxExitedKept: z.number().int().min(0).max(100_000),
});
export type ProcessConfig = z.infer<typeof ProcessConfig>;

/** A change of some of those limits; what is not named stays as it is. */
export const ProcessConfigUpdate = ProcessConfig.partial().strict().meta({ id: "ProcessConfigUpdate" });

/** A terminal's size, in characters (`POST /v1/processes/{id}/terminal/resize`). */
export const TerminalSize = strictResource("TerminalSize", { cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) });

export const ProcessInput = strictResource("ProcessInput", {
  data: z.string(),
  encoding: z.enum(["base64", "utf8"]).optional().describe("how `data` is encoded; base64 by default (as the sandbox-agent SDK sends it)"),
  eof: z.boolean().optional().describe("close the process's stdin after writing"),
});

/** Where output came from: a pipe's stdout or stderr, or a terminal's one stream (`pty`). */
export const LogStream = z.enum(["stdout", "stderr", "pty"]);

/**
 * One piece of a process's output, as the sandbox-agent SDK reads it. Output that is valid UTF-8 is
 * `utf8` text; anything else is `base64`, so binary output survives byte for byte.
 */
export const LogEntry = resource("LogEntry", {
  sequence: z.number().int(),
  timestampMs: z.number().int(),
  stream: LogStream,
  encoding: z.enum(["utf8", "base64"]),
  data: z.string(),
});
export type LogEntry = z.infer<typeof LogEntry>;

/**
 * The last event of a process's followed logs (`event: end`): how the process exited, or that its logs are
 * gone (`reason`: the process was removed, or the machine restarted).
 */
export const ProcessLogEnd = z.union([
  z.object({ id: z.string(), exitCode: z.number().int().nullable(), signal: z.string().nullable() }),
  z.object({ reason: z.literal("not_found") }),
]);
export type ProcessLogEnd = z.infer<typeof ProcessLogEnd>;

export const ProcessLogs = resource("ProcessLogs", {
  processId: z.string(),
  stream: z.enum(["stdout", "stderr", "pty", "combined"]),
  entries: z.array(LogEntry),
  nextSeq: z.number().int().describe("the sequence the next entry will have"),
  droppedThrough: z.number().int().describe("entries up to this sequence were dropped (the per-process limit)"),
});
export type ProcessLogs = z.infer<typeof ProcessLogs>;

export const ProcessList = resource("ProcessList", { processes: z.array(Process) });
export type ProcessList = z.infer<typeof ProcessList>;

/** What a terminal viewer may send on its WebSocket (docs/architecture.md, "Terminals"); anything else is answered with an error frame. */
export const TerminalClientFrame = z.discriminatedUnion("type", [
  z.object({ type: z.literal("input"), data: z.string().max(256 * 1024), encoding: z.enum(["utf8", "base64"]).optional() }),
  TerminalSize.extend({ type: z.literal("resize") }),
  z.object({ type: z.literal("close") }),
]);
export type TerminalClientFrame = z.infer<typeof TerminalClientFrame>;

/** What the runtime sends a terminal viewer besides the output's bytes (text frames). */
export const TerminalServerFrame = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready"), processId: z.string() }),
  z.object({ type: z.literal("exit"), exitCode: z.number().nullable() }),
  z.object({ type: z.literal("error"), message: z.string() }),
]);
export type TerminalServerFrame = z.infer<typeof TerminalServerFrame>;
