/**
 * A sidecar killed outright (SIGKILL, power loss) cannot stop its children. So it writes down
 * every child it starts — pid and the kernel's start time for that pid, so a reused pid is never
 * mistaken for ours — and the next sidecar on this machine stops whatever is still running.
 */
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { logger } from "./log";

const log = logger("process");

interface Entry {
  pid: number;
  startTime: string;
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot (Linux). */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

export class ChildRegistry {
  private readonly path: string;
  private readonly live = new Map<number, Entry>();

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, "children.json");
  }

  /** Stop the children a previous sidecar left behind. Returns how many were stopped. */
  reapLeftovers(): number {
    let entries: Entry[] = [];
    try {
      entries = JSON.parse(readFileSync(this.path, "utf8")) as Entry[];
    } catch {
      return 0;
    }
    let reaped = 0;
    for (const { pid, startTime } of entries) {
      if (processStartTime(pid) !== startTime) continue; // gone, or the pid now belongs to someone else
      try {
        process.kill(pid, "SIGKILL");
        reaped++;
      } catch {
        // exited meanwhile
      }
    }
    if (reaped) log.warn(`stopped ${reaped} process(es) left running by a sidecar that did not shut down cleanly`);
    this.save();
    return reaped;
  }

  add(pid: number): void {
    const startTime = processStartTime(pid);
    if (startTime === null) return; // not Linux, or already gone: nothing to reap later
    this.live.set(pid, { pid, startTime });
    this.save();
  }

  remove(pid: number): void {
    if (this.live.delete(pid)) this.save();
  }

  private save(): void {
    try {
      writeFileSync(this.path, JSON.stringify([...this.live.values()]));
    } catch (err) {
      log.warn(`could not record child processes: ${String(err)}`);
    }
  }
}
