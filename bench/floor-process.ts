/**
 * The floor of this architecture running (bench/floor/): its worker and Durable Object under miniflare, and
 * its relay process in front of the mock agent, connected. bench/run.ts measures round trips and files
 * through it; bench/file-stages.ts profiles its 1 MiB write.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { ROOT } from "../dev/runtime";
import { findDescendants } from "./proc";

const MOCK_AGENT = join(ROOT, "sidecar", "dist", "mock-agent.js");

export interface FloorProcess {
  /** The worker's URL, without a trailing slash. */
  base: string;
  relayPid: number;
  /** The workerd process miniflare started for it (undefined where it could not be told from others). */
  workerd: number | undefined;
  dispose(): Promise<void>;
}

export async function startFloor(options: { inspectorPort?: number } = {}): Promise<FloorProcess> {
  const bundle = await build({
    entryPoints: [join(ROOT, "bench", "floor", "worker.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    external: ["cloudflare:workers"],
    write: false,
  });
  const others = new Set(await findDescendants(process.pid, /workerd/));
  const mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0]!.text,
    compatibilityDate: "2026-04-01",
    durableObjects: { FLOOR: { className: "FloorObject", useSQLite: true } },
    host: "127.0.0.1",
    port: 0,
    unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
    ...(options.inspectorPort ? { inspectorPort: options.inspectorPort } : {}),
  });
  await mf.ready;
  const base = (await mf.unsafeGetDirectURL()).toString().replace(/\/$/, "");
  const relay = spawn(process.execPath, ["--import", "tsx", join(ROOT, "bench", "floor", "relay.ts"), base.replace(/^http/, "ws"), MOCK_AGENT], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const dispose = async () => {
    relay.kill("SIGTERM");
    await mf.dispose();
  };
  try {
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: relay.stdout! }).once("line", () => resolve());
      relay.once("exit", (code) => reject(new Error(`the floor's relay exited (${code}) before connecting`)));
    });
  } catch (err) {
    await dispose();
    throw err;
  }
  const workerd = (await findDescendants(process.pid, /workerd/)).find((pid) => !others.has(pid));
  return { base, relayPid: relay.pid!, workerd, dispose };
}
