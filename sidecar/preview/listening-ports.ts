/**
 * What listens on this machine (GET /v1/ports): every listening TCP socket, on loopback or on all
 * interfaces, with its process where the machine says (this user's processes) and, when that process is one
 * of the runtime's own or a child of one (an agent's `npm run dev`), which. Linux reads /proc; macOS asks
 * `lsof` and `ps`.
 */
import { execFile } from "node:child_process";
import { readdir, readFile, readlink } from "node:fs/promises";
import { promisify } from "node:util";
import type { ListeningPort, PortOwner } from "@agent-runtime/protocol/preview";

const run = promisify(execFile);
/** How far up a process's parents we look for one of the runtime's (agent → shell → npm → vite is four). */
const MAX_ANCESTRY = 32;

export interface Socket {
  port: number;
  address: string;
  pid: number | null;
}

/** The runtime's own processes by pid, and how to find a process's parent. */
export interface ProcessTree {
  owners: ReadonlyMap<number, PortOwner>;
  parentOf(pid: number): Promise<number | null>;
  commandOf(pid: number): Promise<string | null>;
}

/**
 * The listening sockets as one comparable text (`address:port` lines, sorted, each once): what the ports
 * watch compares between its reads, and what a list read tells it it showed (port-watch.ts).
 */
export function socketSet(sockets: readonly { address: string; port: number }[]): string {
  return [...new Set(sockets.map((s) => `${s.address}:${s.port}`))].sort().join("\n");
}

/** `shown`: told the sockets this read saw, so the watch reports their change even if its own reads missed them. */
export async function listeningPorts(
  owners: ReadonlyMap<number, PortOwner>,
  allowed: (port: number) => boolean,
  shown?: (set: string) => void,
): Promise<ListeningPort[]> {
  const { sockets, tree } = process.platform === "linux" ? await linuxSockets(owners) : await lsofSockets(owners);
  shown?.(socketSet(sockets));
  const byPort = new Map<number, { addresses: Set<string>; pid: number | null }>();
  for (const socket of sockets) {
    const entry = byPort.get(socket.port) ?? { addresses: new Set<string>(), pid: null };
    entry.addresses.add(socket.address);
    entry.pid ??= socket.pid;
    byPort.set(socket.port, entry);
  }
  const ports = await Promise.all(
    [...byPort].map(async ([port, { addresses, pid }]) => {
      const owner = pid === null ? null : await ownerOf(pid, tree);
      const command = pid === null ? null : await tree.commandOf(pid);
      // A command line may carry a secret (`mysql -pPASSWORD`): the whole line only for the runtime's own
      // processes and their children, the program's name for the rest.
      return { port, addresses: [...addresses].slice(0, 16), pid, command: owner ? command : programOf(command), owner, allowed: allowed(port) };
    }),
  );
  return ports.sort((a, b) => a.port - b.port);
}

/** The runtime's process this pid is, or descends from; null when it is none of ours. */
export async function ownerOf(pid: number, tree: ProcessTree): Promise<PortOwner | null> {
  let current: number | null = pid;
  for (let depth = 0; current !== null && current > 1 && depth < MAX_ANCESTRY; depth++) {
    const owner = tree.owners.get(current);
    if (owner) return owner;
    current = await tree.parentOf(current);
  }
  return null;
}

// ---------- Linux: /proc/net/tcp{,6} and each process's open sockets ----------

async function linuxSockets(owners: ReadonlyMap<number, PortOwner>): Promise<{ sockets: Socket[]; tree: ProcessTree }> {
  const listening = [...parseProcNet(await readText("/proc/net/tcp"), 4), ...parseProcNet(await readText("/proc/net/tcp6"), 6)];
  const pids = listening.length ? await socketOwners(new Set(listening.map((s) => s.inode))) : new Map<string, number>();
  const sockets = listening.map(({ port, address, inode }) => ({ port, address, pid: pids.get(inode) ?? null }));
  const tree: ProcessTree = {
    owners,
    parentOf: async (pid) => {
      const stat = await readText(`/proc/${pid}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      return Number.isInteger(ppid) && ppid > 0 ? ppid : null;
    },
    commandOf: async (pid) => shorten((await readText(`/proc/${pid}/cmdline`)).split("\0").filter(Boolean).join(" ")),
  };
  return { sockets, tree };
}

/** Listening sockets of one /proc/net table: state 0A, with their port, address and inode. */
export function parseProcNet(text: string, family: 4 | 6): { port: number; address: string; inode: string }[] {
  const out: { port: number; address: string; inode: string }[] = [];
  for (const line of text.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || fields[3] !== "0A") continue;
    const [hexAddress = "", hexPort = ""] = (fields[1] ?? "").split(":");
    out.push({ port: Number.parseInt(hexPort, 16), address: family === 4 ? ipv4(hexAddress) : ipv6(hexAddress), inode: fields[9] ?? "" });
  }
  return out;
}

/** /proc writes an IPv4 address as one little-endian word. */
function ipv4(hex: string): string {
  const bytes = (hex.match(/../g) ?? []).map((b) => Number.parseInt(b, 16)).reverse();
  return bytes.join(".");
}

/** …and an IPv6 address as four little-endian words. */
function ipv6(hex: string): string {
  const words = hex.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((word) => (word.match(/../g) ?? []).reverse());
  const groups = (bytes.join("").match(/.{4}/g) ?? []).map((g) => Number.parseInt(g, 16).toString(16));
  const text = groups.join(":");
  if (text === "0:0:0:0:0:0:0:0") return "::";
  if (text === "0:0:0:0:0:0:0:1") return "::1";
  return text.replace(/^0:0:0:0:0:ffff:/, "::ffff:");
}

/** Which process holds each socket inode: this user's processes' fds, read once. */
async function socketOwners(inodes: Set<string>): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const pids = (await readdir("/proc").catch((): string[] => [])).filter((name) => /^\d+$/.test(name));
  await Promise.all(
    pids.map(async (pid) => {
      const fds = await readdir(`/proc/${pid}/fd`).catch((): string[] => []);
      for (const fd of fds) {
        const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode) && !found.has(inode)) found.set(inode, Number(pid));
      }
    }),
  );
  return found;
}

// ---------- macOS and others: lsof and ps ----------

/** `lsof -F pn`'s listening sockets (`-F n` alone gives them without their process). */
export function parseLsof(stdout: string): Socket[] {
  const sockets: Socket[] = [];
  let pid: number | null = null;
  for (const line of stdout.split("\n")) {
    if (line.startsWith("p")) pid = Number(line.slice(1));
    const name = line.startsWith("n") ? /^(.*):(\d+)$/.exec(line.slice(1)) : null;
    if (name) sockets.push({ port: Number(name[2]), address: (name[1] ?? "").replace(/^\[|\]$/g, "").replace(/^\*$/, "0.0.0.0"), pid });
  }
  return sockets;
}

async function lsofSockets(owners: ReadonlyMap<number, PortOwner>): Promise<{ sockets: Socket[]; tree: ProcessTree }> {
  const lsof = await run("lsof", ["-nP", "-iTCP", "-sTCP:LISTEN", "-F", "pn"]).catch(() => ({ stdout: "" }));
  const sockets = parseLsof(lsof.stdout);
  const ps = await run("ps", ["-axo", "pid=,ppid=,command="]).catch(() => ({ stdout: "" }));
  const table = new Map<number, { ppid: number; command: string }>();
  for (const line of ps.stdout.split("\n")) {
    const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (match) table.set(Number(match[1]), { ppid: Number(match[2]), command: match[3] ?? "" });
  }
  return {
    sockets,
    tree: { owners, parentOf: async (p) => table.get(p)?.ppid ?? null, commandOf: async (p) => shorten(table.get(p)?.command ?? "") },
  };
}

/** The program a command line runs, without its arguments. */
function programOf(command: string | null): string | null {
  const program = command?.split(" ")[0];
  return program ? (program.split("/").pop() ?? program) : null;
}

async function readText(path: string): Promise<string> {
  return readFile(path, "utf8").catch(() => "");
}

function shorten(command: string): string | null {
  if (!command) return null;
  return command.length > 200 ? `${command.slice(0, 199)}…` : command;
}
