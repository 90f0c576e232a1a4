/** What the benchmarks read of processes: memory and CPU from /proc, percentiles. Linux only. */
import { readdir, readFile } from "node:fs/promises";

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function rssMb(pid: number | undefined): Promise<number> {
  if (!pid) return NaN;
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

/** Memory only this process holds (private pages): RSS minus what it shares with every Node process (the binary). */
export async function privateMb(pid: number | undefined): Promise<number> {
  if (!pid) return NaN;
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
  const kb = [...rollup.matchAll(/^Private_(?:Clean|Dirty):\s+(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
  return Math.round((kb / 1024) * 10) / 10;
}

/** Descendants of a process (recursively) whose command line matches. */
export async function findDescendants(pid: number, name: RegExp): Promise<number[]> {
  // Every thread's children: a multi-threaded server (sandbox-agent's runtime) starts processes from any of them.
  const threads = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const lists = await Promise.all(threads.map((tid) => readFile(`/proc/${pid}/task/${tid}/children`, "utf8").catch(() => "")));
  const children = lists.join(" ").trim().split(/\s+/).filter(Boolean).map(Number);
  const found: number[] = [];
  for (const child of children) {
    const cmd = await readFile(`/proc/${child}/cmdline`, "utf8").catch(() => "");
    if (name.test(cmd)) found.push(child);
    found.push(...(await findDescendants(child, name)));
  }
  return found;
}

/** The first descendant of a process whose command line matches. */
export async function findDescendant(pid: number, name: RegExp): Promise<number | undefined> {
  return (await findDescendants(pid, name))[0];
}

/** CPU seconds (user + system) a process has used so far. */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (!pid) return NaN;
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}
