/** Plain, readable log lines on stderr: `17:50:01.123 info  tunnel  connected to ...`. */
type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let threshold: Level = (process.env.SIDECAR_LOG_LEVEL as Level | undefined) ?? "info";

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
