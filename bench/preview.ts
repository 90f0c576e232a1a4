/**
 * Previews (docs/architecture.md, "Previews"), in `npm run bench` (alone: BENCH_ONLY=preview): an app on the
 * machine (a Node HTTP server in its own process) through the worker, the machine's object, the tunnel and
 * the sidecar, against the same requests made to it directly.
 *  - 100 MiB down and up: MiB/s (goal ≥ 100 MiB/s here), workerd's and the sidecar's peak memory during
 *    a 10 MiB and a 100 MiB transfer (goal: the same, whatever the size);
 *  - a small GET: p50 through the preview and direct, and what the preview adds (reported beside the
 *    relay's floor round trip).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newSecret, startSidecar, startWorker } from "../dev/runtime";
import { findDescendants, percentile, rssMb } from "./proc";

export interface PreviewFigures {
  sizeMiB: number;
  downMiBps: number;
  upMiBps: number;
  /** Peak RSS (MB) during a 10 MiB and a 100 MiB download and upload, by process. */
  peakMb: { workerd: { small: number; large: number }; sidecar: { small: number; large: number } };
  smallP50Ms: number;
  directSmallP50Ms: number;
  addedP50Ms: number;
}

const MiB = 1024 * 1024;
const SMALL_REQUESTS = 300;

/** The app: `/small` (a few bytes), `/bytes?size=` (that many, written as read), POST `/count` (counts what it is sent). */
const APP = `
const http = require("node:http");
const piece = Buffer.alloc(256 * 1024, 7);
http.createServer((req, res) => {
  const url = new URL(req.url, "http://app");
  if (url.pathname === "/small") return res.end("ok");
  if (url.pathname === "/count") {
    let bytes = 0;
    req.on("data", (c) => (bytes += c.length));
    return req.on("end", () => res.end(String(bytes)));
  }
  const size = Number(url.searchParams.get("size"));
  res.writeHead(200, { "content-length": String(size) });
  let sent = 0;
  const write = () => {
    while (sent < size) {
      const part = piece.subarray(0, Math.min(piece.length, size - sent));
      sent += part.length;
      if (!res.write(part)) return void res.once("drain", write);
    }
    res.end();
  };
  write();
}).listen(0, "127.0.0.1", function () { console.log(this.address().port); });
`;

async function drain(res: Response): Promise<number> {
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  return bytes;
}

function generated(size: number): ReadableStream<Uint8Array> {
  const piece = new Uint8Array(256 * 1024).fill(7);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close();
      const part = piece.subarray(0, Math.min(piece.length, size - sent));
      sent += part.length;
      controller.enqueue(part);
    },
  });
}

export async function benchPreview(): Promise<PreviewFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-preview-"));
  const app = spawn(process.execPath, ["-e", APP], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = (await once(app.stdout!, "data")) as [Buffer];
  const port = Number(line.toString().trim());
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const others = new Set(await findDescendants(process.pid, /workerd/));
  const worker = await startWorker({ secrets, vars: { ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json" } });
  const workerd = (await findDescendants(process.pid, /workerd/)).find((pid) => !others.has(pid));
  const sidecar = await startSidecar({
    url: worker.url,
    machine: "local",
    tunnelSecret: secrets.TUNNEL_SECRET,
    dataDir: join(dir, "data"),
    workdir: dir,
    env: { AGENT_RUNTIME_EXPOSE_PORTS: String(port) },
  });
  try {
    await sidecar.connected();
    const opened = await fetch(`${worker.url}/machines/local/v1/ports/${port}/preview`, {
      method: "POST",
      headers: { authorization: `Bearer ${secrets.API_TOKEN}` },
    });
    const { url: base } = (await opened.json()) as { url: string };
    const direct = `http://127.0.0.1:${port}/`;

    /** Peak RSS of workerd and the sidecar while `work` runs, sampled every 50 ms. */
    const peaks = async (work: () => Promise<unknown>) => {
      const peak = { workerd: 0, sidecar: 0 };
      let running = true;
      const sampler = (async () => {
        while (running) {
          peak.workerd = Math.max(peak.workerd, await rssMb(workerd));
          peak.sidecar = Math.max(peak.sidecar, await rssMb(sidecar.child.pid));
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      await work();
      running = false;
      await sampler;
      return peak;
    };
    const both = async (size: number) => {
      const started = performance.now();
      if ((await drain(await fetch(`${base}bytes?size=${size}`))) !== size) throw new Error("the download came short");
      const downMs = performance.now() - started;
      const upStarted = performance.now();
      const up = await fetch(`${base}count`, { method: "POST", body: generated(size), duplex: "half" } as RequestInit);
      if (Number(await up.text()) !== size) throw new Error("the upload came short");
      return { downMs, upMs: performance.now() - upStarted };
    };

    // Warm-up: the heap of each process grows once to its working size (a first 100 MiB each way), so the
    // peaks below compare sizes, not a heap's first growth.
    for (let i = 0; i < 20; i++) await drain(await fetch(`${base}small`));
    await both(100 * MiB);
    let timing = { downMs: 0, upMs: 0 };
    const small = await peaks(() => both(10 * MiB));
    const large = await peaks(async () => {
      timing = await both(100 * MiB);
    });

    const latencies = async (target: string) => {
      const times: number[] = [];
      for (let i = 0; i < SMALL_REQUESTS; i++) {
        const started = performance.now();
        await drain(await fetch(`${target}small`));
        times.push(performance.now() - started);
      }
      return percentile(times, 50);
    };
    const directSmallP50Ms = await latencies(direct);
    const smallP50Ms = await latencies(base);
    return {
      sizeMiB: 100,
      downMiBps: 100 / (timing.downMs / 1000),
      upMiBps: 100 / (timing.upMs / 1000),
      peakMb: { workerd: { small: small.workerd, large: large.workerd }, sidecar: { small: small.sidecar, large: large.sidecar } },
      smallP50Ms,
      directSmallP50Ms,
      addedP50Ms: smallP50Ms - directSmallP50Ms,
    };
  } finally {
    await sidecar.stop();
    await worker.dispose();
    app.kill("SIGTERM");
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

/** The figures as bench/README.md quotes them, `floorRttP50Ms` the relay's floor round trip of the same run. */
export function previewReport(f: PreviewFigures, floorRttP50Ms: number | null): string {
  const grew = (p: { small: number; large: number }) => p.large - p.small;
  const lines = [
    "Previews (an app on the machine through the worker, the object, the tunnel and the sidecar):",
    `- ${f.sizeMiB} MiB down ${fmt(f.downMiBps, 0)} MiB/s, up ${fmt(f.upMiBps, 0)} MiB/s`,
    `- peak memory, 10 MiB → 100 MiB: workerd ${fmt(f.peakMb.workerd.small, 0)} → ${fmt(f.peakMb.workerd.large, 0)} MB, sidecar ${fmt(f.peakMb.sidecar.small, 0)} → ${fmt(f.peakMb.sidecar.large, 0)} MB`,
    `- a small GET: p50 ${fmt(f.smallP50Ms, 3)} ms through the preview, ${fmt(f.directSmallP50Ms, 3)} ms direct: ${fmt(f.addedP50Ms, 3)} ms added` +
      (floorRttP50Ms !== null ? ` (the relay's floor round trip: ${fmt(floorRttP50Ms, 3)} ms)` : ""),
  ];
  const targets = [
    [`${f.sizeMiB} MiB both ways ≥ 100 MiB/s`, f.downMiBps >= 100 && f.upMiBps >= 100],
    [
      "workerd's and the sidecar's memory do not follow the size (≤ 16 MB more at 100 MiB than at 10 MiB)",
      grew(f.peakMb.workerd) <= 16 && grew(f.peakMb.sidecar) <= 16,
    ],
  ] as const;
  lines.push(...targets.map(([name, met]) => `- ${met ? "met" : "MISSED"}: ${name}`));
  return lines.join("\n");
}
