/**
 * Says when what listens on this machine changes (the tunnel's `ports` frame), so a page showing "the
 * agent's app is listening on :5173" follows within a second or two instead of asking every ten
 * (docs/architecture.md, "Live presence and ports"). It reads only the listening sockets' addresses (on
 * Linux two small /proc files; elsewhere `lsof`, less often), never the processes behind them: those are
 * read by `ports.list` when someone asks. It runs only while the tunnel is up to a worker that asked for it,
 * and says nothing while nothing changes, so the machine's object is not woken for it.
 *
 * A page is shown what `ports.list` read, which may be a state the watch's own reads, a second apart, never
 * saw (an app that listened and stopped between two of them). Compared only with its own reads, the watch
 * would then say nothing when that state goes, and the page would show a closed port until its next poll.
 * So each list read tells the watch what it showed (`shown`): from then on a change is counted from it.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { parseLsof, parseProcNet, socketSet } from "./listening-ports";

const run = promisify(execFile);

/** How often the sockets are read: /proc is cheap; lsof costs a process each time. */
const EVERY_MS = process.platform === "linux" ? 1000 : 2500;

/** The listening sockets as one comparable text (`address:port` lines, sorted), as `listeningPorts` counts them. */
export async function listeningSet(): Promise<string> {
  if (process.platform === "linux") {
    const read = (path: string) => readFile(path, "utf8").catch(() => "");
    return socketSet([...parseProcNet(await read("/proc/net/tcp"), 4), ...parseProcNet(await read("/proc/net/tcp6"), 6)]);
  }
  const { stdout } = await run("lsof", ["-nP", "-iTCP", "-sTCP:LISTEN", "-F", "pn"]).catch(() => ({ stdout: "" }));
  return socketSet(parseLsof(stdout));
}

export class PortWatch {
  /** The sockets last read or shown (null: none yet, the first read is the baseline). */
  private last: string | null = null;
  private changed: (() => void) | null = null;

  /**
   * Calls `changed` after each change of the listening sockets, until the returned function stops it
   * (`read`: after each read of them, for tests that wait for the first).
   */
  watch(changed: () => void, everyMs = EVERY_MS, read?: () => void): () => void {
    this.last = null;
    this.changed = changed;
    let stopped = false;
    let timer: NodeJS.Timeout | null = null;
    const tick = async () => {
      await this.check();
      if (stopped) return;
      read?.();
      timer = setTimeout(tick, everyMs);
      timer.unref();
    };
    void tick();
    return () => {
      stopped = true;
      if (this.changed === changed) this.changed = null;
      if (timer) clearTimeout(timer);
    };
  }

  /** One read of the sockets, compared with the last. */
  async check(): Promise<void> {
    this.saw(await listeningSet());
  }

  /** What a list read saw, and so showed someone: a change from the watch's last reading is one too. */
  shown(set: string): void {
    this.saw(set);
  }

  private saw(set: string): void {
    const before = this.last;
    this.last = set;
    if (before !== null && set !== before) this.changed?.();
  }
}

/** A watch of its own (one tunnel's, or a test's). */
export function watchPorts(changed: () => void, everyMs = EVERY_MS, read?: () => void): () => void {
  return new PortWatch().watch(changed, everyMs, read);
}
