/**
 * Says when what listens on this machine changes (the tunnel's `ports` frame), so a page showing "the
 * agent's app is listening on :5173" follows within a second or two instead of asking every ten
 * (docs/architecture.md, "Live presence and ports"). It reads only the listening sockets' addresses (on
 * Linux two small /proc files; elsewhere `lsof`, less often), never the processes behind them: those are
 * read by `ports.list` when someone asks. It runs only while the tunnel is up to a worker that asked for it,
 * and says nothing while nothing changes, so the machine's object is not woken for it.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { parseProcNet } from "./listening-ports";

const run = promisify(execFile);

/** How often the sockets are read: /proc is cheap; lsof costs a process each time. */
const EVERY_MS = process.platform === "linux" ? 1000 : 2500;

/** The listening sockets as one comparable text (`address:port` lines, sorted). */
export async function listeningSet(): Promise<string> {
  if (process.platform === "linux") {
    const read = (path: string) => readFile(path, "utf8").catch(() => "");
    const sockets = [...parseProcNet(await read("/proc/net/tcp"), 4), ...parseProcNet(await read("/proc/net/tcp6"), 6)];
    return [...new Set(sockets.map((s) => `${s.address}:${s.port}`))].sort().join("\n");
  }
  const { stdout } = await run("lsof", ["-nP", "-iTCP", "-sTCP:LISTEN", "-F", "n"]).catch(() => ({ stdout: "" }));
  return [...new Set(stdout.split("\n").filter((line) => line.startsWith("n")))].sort().join("\n");
}

/**
 * Calls `changed` after each change of the listening sockets, until the returned function stops it
 * (`read`: after each read of them, for tests that wait for the first).
 */
export function watchPorts(changed: () => void, everyMs = EVERY_MS, read?: () => void): () => void {
  let last: string | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const tick = async () => {
    const now = await listeningSet();
    if (stopped) return;
    if (last !== null && now !== last) changed();
    last = now;
    read?.();
    timer = setTimeout(tick, everyMs);
    timer.unref();
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
