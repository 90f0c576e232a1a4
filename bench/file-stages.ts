/**
 * The 1 MiB write by stage, ours against the floor's (bench/README.md, "The 1 MiB write by stage"):
 * `npx tsx bench/file-stages.ts`. Per setup, WRITES sequential `PUT /v1/fs/file` of the same 1 MiB random
 * file over one path (as the bench's pairs do): the client's wall time, the CPU of workerd and of the
 * process on the machine's side (the sidecar, the floor's relay) per write from /proc; then STRACED more
 * writes with `strace -c -f` attached to that process (the system calls it makes per write), and
 * TIMELINE writes with `strace -ttt -f` for where a write's wall time goes on the machine's side: from
 * the frame's first byte read to its last, then to the first file call, the file calls, and the answer
 * sent (timed under strace, which slows every system call: for comparing the two sides, not as latencies).
 * FILE_STAGE_PROFILE=1 adds a CPU profile of each workerd isolate over the writes (by module and function);
 * FILE_STAGE_CPU_ONLY=1 leaves out strace. Loopback only; the floor's setup is measured first, then ours.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newSecret, ROOT, startSidecar, startWorker } from "../dev/runtime";
import { cpuSeconds, findDescendants, percentile } from "./proc";
import { startFloor } from "./floor-process";
import { fileAt, inspect, moduleLines } from "./stages";

const WRITES = Number(process.env.FILE_STAGE_WRITES ?? 200);
const STRACED = 50;
const TIMELINE = 20;
/** In the files engineer's port range: workerd's inspector, for the profile of our isolate over the writes. */
const INSPECTOR_PORT = 22229;

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  workerd: number;
  machineSide: number;
}

const bytes = randomBytes(1024 * 1024);

async function put(t: Target): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(t.url, { method: "PUT", headers: { ...t.headers, "content-type": "application/octet-stream" }, body: bytes });
  await res.text();
  if (!res.ok) throw new Error(`${t.name}: ${res.status}`);
  return performance.now() - t0;
}

async function strace(pid: number, args: string[], writes: number, t: Target): Promise<string> {
  const out = join(tmpdir(), `file-stages-${pid}-${Date.now()}.txt`);
  const child = spawn("strace", [...args, "-f", "-o", out, "-p", String(pid)], { stdio: ["ignore", "ignore", "pipe"] });
  // strace says "Process N attached" once it is in: then the writes start.
  await new Promise<void>((resolve) => child.stderr!.on("data", (d: Buffer) => d.toString().includes("attached") && resolve()));
  for (let i = 0; i < writes; i++) await put(t);
  child.kill("SIGINT");
  await new Promise((r) => child.once("exit", r));
  const text = await readFile(out, "utf8");
  await rm(out, { force: true });
  return text;
}

/** Per write, on the machine's side: the frame read (first to last read of the socket), then to the first file call, the file calls, the answer. */
function timeline(trace: string): Record<string, number> {
  const lines = trace.split("\n").filter(Boolean);
  const at = (l: string) => Number(/^\d+\s+(\d+\.\d+)/.exec(l)?.[1] ?? Number.NaN);
  const call = (l: string) => /^\d+\s+\d+\.\d+\s+(\w+)\((\d*)/.exec(l);
  const FILE_CALLS = new Set([
    "openat",
    "mkdir",
    "rename",
    "chmod",
    "fchmod",
    "statx",
    "newfstatat",
    "lstat",
    "stat",
    "unlink",
    "pwrite64",
    "fstat",
    "close",
    "write",
    "writev",
  ]);
  // The socket: the descriptor whose read starts a binary WebSocket frame (0x82); its reads and writes are the frame and the answer.
  let socket = "";
  const writes: Record<string, number>[] = [];
  let cur: { first?: number; lastRead?: number; firstFile?: number; lastFile?: number } = {};
  for (const l of lines) {
    const t = at(l);
    const m = call(l);
    if (Number.isNaN(t) || !m) continue;
    const [, name, fd] = m as unknown as [string, string, string];
    if (name === "read" && l.includes('"\\x82')) socket = fd;
    const onSocket = fd === socket && socket !== "";
    if (onSocket && name === "read" && cur.firstFile === undefined) {
      cur.first ??= t;
      cur.lastRead = t;
    } else if (cur.first !== undefined && !onSocket && FILE_CALLS.has(name) && !["0", "1", "2"].includes(fd)) {
      cur.firstFile ??= t;
      cur.lastFile = t;
    } else if (cur.firstFile !== undefined && onSocket && (name === "write" || name === "writev")) {
      writes.push({
        "frame read (µs)": (cur.lastRead! - cur.first!) * 1e6,
        "to the first file call (µs)": (cur.firstFile - cur.lastRead!) * 1e6,
        "file calls (µs)": (cur.lastFile! - cur.firstFile) * 1e6,
        "to the answer sent (µs)": (t - cur.lastFile!) * 1e6,
      });
      cur = {};
    }
  }
  const keys = Object.keys(writes[0] ?? {});
  return Object.fromEntries([
    ["writes seen", writes.length],
    ...keys.map((k) => [
      k,
      Math.round(
        percentile(
          writes.map((w) => w[k]!),
          50,
        ),
      ),
    ]),
  ]);
}

async function measure(t: Target): Promise<Record<string, unknown>> {
  for (let i = 0; i < 20; i++) await put(t);
  const pids = [t.workerd, t.machineSide];
  const before = await Promise.all(pids.map(cpuSeconds));
  const walls: number[] = [];
  for (let i = 0; i < WRITES; i++) walls.push(await put(t));
  const after = await Promise.all(pids.map(cpuSeconds));
  const [workerdUs, sideUs] = pids.map((_, i) => Math.round(((after[i]! - before[i]!) / WRITES) * 1e6));
  const cpu = {
    setup: t.name,
    "wall p50 (ms)": percentile(walls, 50).toFixed(2),
    "workerd CPU per write (µs)": workerdUs,
    "machine side CPU per write (µs)": sideUs,
  };
  if (process.env.FILE_STAGE_CPU_ONLY) return cpu;
  const counted = await strace(t.machineSide, ["-c", "-U", "name,calls,errors"], STRACED, t);
  const calls = [...counted.matchAll(/^\s*(\w+)\s+(\d+)\s*(\d*)\s*$/gm)]
    .filter(([, name]) => name !== "total" && name !== "syscall")
    .map(([, name, n, errors]) => `${name} ${(Number(n) / STRACED).toFixed(1)}${errors ? ` (${(Number(errors) / STRACED).toFixed(1)} failed)` : ""}`);
  const profiled = process.env.FILE_STAGE_PROFILE ? await profile(t, workerdUs!) : {};
  const traced = await strace(t.machineSide, ["-ttt", "-x", "-s", "1", "-e", "trace=%file,%desc,%network"], TIMELINE, t);
  return {
    ...cpu,
    "system calls per write (strace -c)": calls.join(", "),
    ...timeline(traced),
    ...profiled,
  };
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** Our isolate's CPU over WRITES writes, by module and by function (self samples, shares of the busy ones × the CPU per write). */
async function profile(t: Target, workerdUs: number): Promise<Record<string, unknown>> {
  const cdp = await inspect(INSPECTOR_PORT);
  // The isolate's heap: every full collection marks it, and the 1 MiB buffers of each write bring the next one closer.
  const heap = (await cdp.send("Runtime.getHeapUsage")) as { usedSize: number; totalSize: number };
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
  await cdp.send("Profiler.start");
  for (let i = 0; i < WRITES; i++) await put(t);
  const { profile } = (await cdp.send("Profiler.stop")) as { profile: { nodes: ProfileNode[]; samples: number[] } };
  cdp.close();
  // The floor's bundle is not on disk: its frames are named by function alone.
  const starts = t.name === "floor" ? [] : await moduleLines(join(ROOT, "dist", "worker.js"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === "(idle)") continue;
    busy++;
    const file =
      n.callFrame.url.includes("worker.js") && starts.length > 0
        ? fileAt(starts, n.callFrame.lineNumber)
        : n.callFrame.functionName || n.callFrame.url || "(native)";
    byFile.set(file, (byFile.get(file) ?? 0) + 1);
    const fn = `${file} ${n.callFrame.functionName || "(anonymous)"}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + 1);
  }
  const top = (m: Map<string, number>, k: number) =>
    Object.fromEntries(
      [...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, k)
        .map(([name, n]) => [name, Math.round((n / busy) * workerdUs)]),
    );
  return {
    "isolate heap used (MB)": Math.round(heap.usedSize / 1e5) / 10,
    "workerd µs per write by module": top(byFile, 15),
    "by function": top(byFunction, 20),
  };
}

async function floor<T>(run: (t: Target) => Promise<T>): Promise<T> {
  const started = await startFloor(process.env.FILE_STAGE_PROFILE ? { inspectorPort: INSPECTOR_PORT } : {});
  const dir = await mkdtemp(join(tmpdir(), "file-stages-floor-"));
  try {
    return await run({
      name: "floor",
      url: `${started.base}/v1/fs/file?path=${encodeURIComponent(join(dir, "f.bin"))}`,
      headers: {},
      workerd: started.workerd!,
      machineSide: started.relayPid,
    });
  } finally {
    await started.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

async function ours<T>(run: (t: Target) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "file-stages-ours-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const others = new Set(await findDescendants(process.pid, /workerd/));
  const worker = await startWorker({ secrets, ...(process.env.FILE_STAGE_PROFILE ? { inspectorPort: INSPECTOR_PORT } : {}) });
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  try {
    await sidecar.connected();
    const workerd = (await findDescendants(process.pid, /workerd/)).find((pid) => !others.has(pid))!;
    return await run({
      name: "this project",
      url: `${worker.url}/machines/local/v1/fs/file?path=${encodeURIComponent(join(dir, "f.bin"))}`,
      headers: { authorization: `Bearer ${secrets.API_TOKEN}` },
      workerd,
      machineSide: sidecar.child.pid!,
    });
  } finally {
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

const rows = [await floor(measure), await ours(measure)];
for (const row of rows) console.log(JSON.stringify(row, null, 1));
process.exit(0);
