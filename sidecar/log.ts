/** Plain, readable log lines on stderr: `17:50:01.123 info  tunnel  connected to ...`. */
import { type ProblemInit, ProblemError } from "@agent-runtime/protocol/problems";

const LEVELS = ["debug", "info", "warn", "error"] as const;
export type Level = (typeof LEVELS)[number];
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** The level a setting names, or undefined when it names none. */
export function levelNamed(name: string | undefined): Level | undefined {
  return LEVELS.find((level) => level === name);
}

let threshold: Level = levelNamed(process.env.SIDECAR_LOG_LEVEL) ?? "info";

export function setLogLevel(level: Level): void {
  threshold = level;
}

export interface Logger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export function logger(scope: string): Logger {
  const emit = (level: Level, msg: string) => {
    if (ORDER[level] < ORDER[threshold]) return;
    const time = new Date().toISOString().slice(11, 23);
    process.stderr.write(`${time} ${level.padEnd(5)} ${scope.padEnd(8)} ${msg}\n`);
  };
  return {
    debug: (m) => emit("debug", m),
    info: (m) => emit("info", m),
    warn: (m) => emit("warn", m),
    error: (m) => emit("error", m),
  };
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The code of a Node system error (ENOENT, ECONNREFUSED, …); undefined for anything else. */
export function errnoCode(err: unknown): string | undefined {
  return err instanceof Error && "code" in err && typeof err.code === "string" ? err.code : undefined;
}

/** What failed, as a problem: a ProblemError's own, else an internal one saying what was being done. */
export function problemOf(err: unknown, doing: string): ProblemInit {
  return err instanceof ProblemError ? err.toInit() : { code: "internal", detail: `${doing}: ${errorText(err)}` };
}
