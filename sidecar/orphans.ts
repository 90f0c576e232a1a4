/**
 * A sidecar killed outright (SIGKILL, power loss) cannot stop its children. So it writes down
 * every child it starts — its pid, which is also its process group, and the kernel's start time for
 * that pid, so a reused pid is never mistaken for ours — and the next sidecar on this machine stops
 * whatever of those groups is still running, leader or not.
 */
import { readdirSync, readFileSync, mkdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { logger } from "./log";
import { z } from "zod";
import { readJsonFileSync, UnreadableFile } from "./json-file";
import { writeFileAtomicSync } from "./atomic-file";

const log = logger("process");

const Entry = z.object({ pid: z.number().int(), startTime: z.string() });
type Entry = z.output<typeof Entry>;

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses), or null. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot (Linux). */
export function processStartTime(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

/**
 * The processes of a group that started no earlier than its leader did: those are the leader's
 * (a group id reused later would only hold processes started after a newer leader, which has its own pid).
 */
function groupMembers(pgid: number, leaderStart: string): number[] {
  const members: number[] = [];
  let pids: string[] = [];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return members;
  }
  for (const name of pids) {
    const fields = statFields(Number(name));
    // Field 5 is the process group; field 22 the start time.
    if (fields && Number(fields[2]) === pgid && BigInt(fields[19] ?? "0") >= BigInt(leaderStart)) members.push(Number(name));
  }
  return members;
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
      entries = readJsonFileSync(this.path, z.array(Entry));
    } catch (err) {
      // None written (a first start), or one this release cannot read: nothing is killed on a guess.
      if (err instanceof UnreadableFile) log.warn(`${err.message}: no leftover children stopped`);
      return 0;
    }
    let reaped = 0;
    for (const { pid, startTime } of entries) {
      const leaderAlive = processStartTime(pid) === startTime;
      // The leader may be gone while what it started lives on in its group.
      const members = groupMembers(pid, startTime).filter((member) => member !== pid || leaderAlive);
      for (const member of members) {
        try {
          process.kill(member, "SIGKILL");
          reaped++;
        } catch {
          // exited meanwhile
        }
      }
    }
    if (reaped) log.warn(`stopped ${reaped} process(es) left running by a sidecar that did not shut down cleanly`);
    this.removeStaged();
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

  /** A record a killed sidecar was still writing (under its temporary name): never read, only removed. */
  private removeStaged(): void {
    const name = basename(this.path);
    for (const entry of readdirSync(dirname(this.path))) {
      if (entry.startsWith(`${name}.`) && entry.endsWith(".tmp")) rmSync(join(dirname(this.path), entry), { force: true });
    }
  }

  // Whole or not at all: a sidecar killed while writing in place left an empty file once, and the next one
  // could then stop none of the children it names (test/faults.test.ts).
  private save(): void {
    try {
      writeFileAtomicSync(this.path, JSON.stringify([...this.live.values()]));
    } catch (err) {
      log.warn(`could not record child processes: ${String(err)}`);
    }
  }
}
