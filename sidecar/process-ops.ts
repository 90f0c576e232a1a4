/** The process operations of the tunnel, over the process manager. */
import { isAbsolute, resolve } from "node:path";
import { homedir } from "node:os";
import { ProblemError } from "../src/protocol/problems";
import type { ProcessManager } from "./processes";
import type { ResolvedStream } from "./stream-hub";
import type { OpHandlers } from "./tunnel";

type ProcessOp = Extract<keyof OpHandlers, `processes.${string}`>;

/** The process operations of the handler table (the sidecar's table adds the others, and must be total). */
export function processHandlers(processes: ProcessManager): Pick<OpHandlers, ProcessOp> {
  return {
    "processes.list": async () => ({ processes: processes.list() }),
    "processes.get": async ({ id }) => processes.get(id).info,
    "processes.spawn": async (req) => {
      const cwd = req.cwd ? (isAbsolute(req.cwd) ? req.cwd : resolve(homedir(), req.cwd)) : process.cwd();
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
    "processes.input": async ({ id, data, encoding, eof }) => {
      const proc = processes.get(id);
      if (!proc.running) throw new ProblemError("conflict", `process '${id}' has exited`);
      if (!proc.info.interactive) throw new ProblemError("conflict", `process '${id}' was not started with interactive: true`);
      const bytes = Buffer.from(data, encoding);
      if (bytes.length > processes.limits.maxInputBytes) {
        throw new ProblemError("payload_too_large", `input is limited to ${processes.limits.maxInputBytes} bytes per call`);
      }
      await proc.write(bytes);
      if (eof) proc.endInput();
      return { written: bytes.length };
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
    "processes.logs": async ({ id, after }) => {
      const proc = processes.get(id);
      const { events } = proc.output.since(after);
      return {
        entries: events.map(([seq, json]) => ({ seq, ...(JSON.parse(json) as { stream: "stdout" | "stderr"; atMs: number; data: string }) })),
        nextSeq: proc.output.lastSeq + 1,
        droppedThrough: proc.output.droppedThrough,
      };
    },
  };
}

export function processStream(processes: ProcessManager, id: string): ResolvedStream {
  const proc = processes.find(id);
  return proc ? { log: proc.output } : null;
}
