/**
 * A whole runtime for one test file: the worker in workerd and real sidecar processes,
 * each machine with its own data folder, all torn down afterwards.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newSecret, newVapidKeys, startSidecar, startWorker, type RunningWorker, type SidecarProcess } from "../dev/runtime";

export interface Runtime {
  url: string;
  token: string;
  tunnelSecret: string;
  worker: RunningWorker;
  sidecars: Map<string, SidecarProcess>;
  dir: string;
  /** fetch against the worker with the API token (unless headers say otherwise). */
  api(path: string, init?: RequestInit): Promise<Response>;
  addSidecar(machine: string, env?: Record<string, string>): Promise<SidecarProcess>;
  /** Stop workerd and start it again on the same port and state folder (sidecars reconnect by themselves). */
  restartWorker(vars?: Record<string, string>): Promise<void>;
  dispose(): Promise<void>;
}

export async function startRuntime(
  opts: {
    machines?: string[];
    vars?: Record<string, string>;
    persist?: boolean;
    /** Run the instrumented worker, whose objects answer `debugStats()` (dev/instrumented-worker.ts). */
    instrumented?: boolean;
    /** The Node its sidecars run on (test/node-releases.ts), if not the tests' own. */
    sidecarNode?: string;
  } = {},
): Promise<Runtime> {
  const dir = await mkdtemp(join(tmpdir(), "agent-runtime-test-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts"), ...newVapidKeys() };
  // `/v1/...` means machine `local` unless a test says otherwise (as `npm start` does). Tests reach no
  // registry on the Internet: unless one serves its own, the worker finds none and lists its built-in catalog.
  const vars = { DEFAULT_MACHINE: "local", ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json", ...opts.vars };
  const workerOptions = { secrets, ...(opts.persist ? { persistTo: join(dir, "state") } : {}), vars, instrumented: opts.instrumented ?? false };
  let worker = await startWorker(workerOptions);
  const sidecars = new Map<string, SidecarProcess>();
  const runtime: Runtime = {
    url: worker.url,
    token: secrets.API_TOKEN,
    tunnelSecret: secrets.TUNNEL_SECRET,
    get worker() {
      return worker;
    },
    sidecars,
    dir,
    api(path, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has("authorization")) headers.set("authorization", `Bearer ${secrets.API_TOKEN}`);
      return fetch(`${worker.url}${path}`, { ...init, headers });
    },
    async addSidecar(machine, env) {
      const sidecar = await startSidecar({
        url: worker.url,
        machine,
        tunnelSecret: secrets.TUNNEL_SECRET,
        dataDir: join(dir, `data-${machine}`),
        workdir: dir,
        ...(env ? { env } : {}),
        ...(opts.sidecarNode ? { node: opts.sidecarNode } : {}),
        ...(process.env.SIDECAR_ECHO ? { echo: true } : {}),
      });
      sidecars.set(machine, sidecar);
      await sidecar.connected();
      return sidecar;
    },
    async restartWorker(vars) {
      const port = Number(new URL(worker.url).port);
      await worker.dispose();
      worker = await startWorker({ ...workerOptions, port, vars: { ...workerOptions.vars, ...vars } });
    },
    async dispose() {
      await Promise.all([...sidecars.values()].map((s) => s.stop()));
      await worker.dispose();
      await rm(dir, { recursive: true, force: true });
    },
  };
  for (const machine of opts.machines ?? ["local"]) await runtime.addSidecar(machine);
  return runtime;
}

export async function problemOf(res: Response): Promise<{ type: string; status: number; detail: string; [k: string]: unknown }> {
  if (res.headers.get("content-type") !== "application/problem+json") {
    throw new Error(`expected a problem+json body, got ${res.status} ${res.headers.get("content-type")}: ${await res.text()}`);
  }
  return (await res.json()) as { type: string; status: number; detail: string };
}

export function errorCode(problem: { type: string }): string {
  return problem.type.replace("urn:agent-runtime:error:", "");
}

export async function waitFor<T>(fn: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
