/** The tunnel's process operations: spawn, run, input, signals, terminals' sizes, output read back. */
import { z } from "zod";
import {
  Process,
  ProcessConfig,
  ProcessConfigUpdate,
  ProcessList,
  ProcessLogs,
  ProcessRunRequest,
  ProcessRunResponse,
  SpawnRequest,
  TerminalSize,
} from "../processes";
import { Deleted, HALF_MINUTE, Id, MINUTE, Nothing, type OpDefinition } from "./define";

export const PROCESS_OPS = {
  "processes.list": { deadlineMs: MINUTE, readOnly: true, args: Nothing, result: ProcessList },
  "processes.get": { deadlineMs: MINUTE, readOnly: true, problems: ["not_found"], args: z.object({ id: Id }), result: Process },
  "processes.spawn": { deadlineMs: MINUTE, problems: ["not_found", "too_many_processes"], args: SpawnRequest, result: Process },
  "processes.run": { deadlineMs: MINUTE, problems: ["not_found", "too_many_processes"], args: ProcessRunRequest, result: ProcessRunResponse },
  "processes.resize": {
    deadlineMs: HALF_MINUTE,
    problems: ["not_found"],
    args: z.object({ id: Id, cols: z.number().int(), rows: z.number().int() }),
    result: TerminalSize,
  },
  "processes.config.get": { deadlineMs: MINUTE, readOnly: true, args: Nothing, result: ProcessConfig },
  "processes.config.set": { deadlineMs: MINUTE, args: ProcessConfigUpdate, result: ProcessConfig },
  "processes.input": {
    deadlineMs: HALF_MINUTE,
    problems: ["not_found", "payload_too_large"],
    args: z.object({ id: Id, data: z.string(), encoding: z.enum(["utf8", "base64"]), eof: z.boolean() }),
    result: z.object({ bytesWritten: z.number() }),
  },
  "processes.signal": { deadlineMs: MINUTE, problems: ["not_found"], args: z.object({ id: Id, signal: z.enum(["SIGTERM", "SIGKILL"]) }), result: Process },
  "processes.delete": { deadlineMs: MINUTE, problems: ["not_found"], args: z.object({ id: Id }), result: Deleted },
  "processes.logs": {
    deadlineMs: MINUTE,
    readOnly: true,
    problems: ["not_found"],
    args: z.object({
      id: Id,
      after: z.number().int().min(0),
      tail: z.number().int().min(0).optional(),
      stream: z.enum(["stdout", "stderr", "pty", "combined"]).optional(),
    }),
    result: ProcessLogs,
  },
} as const satisfies Record<string, OpDefinition>;
