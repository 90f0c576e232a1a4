/**
 * The whole product on one machine: the worker in workerd (through Miniflare, state persisted
 * to a folder) and sidecars as real child processes dialing it over real WebSockets.
 * `npm start`, the tests and the benchmark all start it through here. The bindings mirror
 * wrangler.toml.
 */
import { createServer } from "node:net";
import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { SIDECAR_NODE_FLAGS } from "../sidecar/node-flags";

export const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
export const WORKER_BUNDLE = `${ROOT}/dist/worker.js`;
/** The same worker with its Durable Objects' invocations and storage writes counted (dev/instrumented-worker.ts). */
export const INSTRUMENTED_WORKER_BUNDLE = `${ROOT}/dist/instrumented-worker.js`;
export const SIDECAR_BUNDLE = `${ROOT}/sidecar/dist/sidecar.js`;
/** The worker's static files (scripts/build.ts: the dashboard, the sidecar package), wrangler.toml's `[assets] directory`. */
export const STATIC_FILES = `${ROOT}/dist/static`;
const STATIC_FILES_WORKER = "static-files";

export interface Secrets {
  API_TOKEN: string;
  TUNNEL_SECRET: string;
  /** Web Push's key pair (RFC 8292), base64url: the 65-byte public point and the 32-byte private scalar. */
  VAPID_PUBLIC_KEY?: string;
  VAPID_PRIVATE_KEY?: string;
}

export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString("base64url")}`;
}

/** A new VAPID key pair, in the form `wrangler secret put` and the web-push tools use. */
export function newVapidKeys(): { VAPID_PUBLIC_KEY: string; VAPID_PRIVATE_KEY: string } {
  const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
  return { VAPID_PUBLIC_KEY: point.toString("base64url"), VAPID_PRIVATE_KEY: jwk.d! };
}

/** Read `.dev.vars`, adding whichever secret is missing (the file is git-ignored). */
export function ensureDevVars(path = `${ROOT}/.dev.vars`): Secrets {
  const vars = new Map<string, string>();
  if (existsSync(path)) {
    for (const line of readFileSync(path, "utf8").split("\n")) {
      const m = /^\s*([A-Z_][A-Z0-9_]*)\s*=\s*"?(.*?)"?\s*$/.exec(line);
      if (m) vars.set(m[1]!, m[2]!);
    }
  }
  let changed = false;
  for (const [key, prefix] of [
    ["API_TOKEN", "at"],
    ["TUNNEL_SECRET", "ts"],
  ] as const) {
    if (!vars.get(key)) {
      vars.set(key, newSecret(prefix));
      changed = true;
    }
  }
  if (!vars.get("VAPID_PUBLIC_KEY") || !vars.get("VAPID_PRIVATE_KEY")) {
    for (const [k, v] of Object.entries(newVapidKeys())) vars.set(k, v);
    changed = true;
  }
  if (changed) writeFileSync(path, `${[...vars].map(([k, v]) => `${k}="${v}"`).join("\n")}\n`, { mode: 0o600 });
  return {
    API_TOKEN: vars.get("API_TOKEN")!,
    TUNNEL_SECRET: vars.get("TUNNEL_SECRET")!,
    VAPID_PUBLIC_KEY: vars.get("VAPID_PUBLIC_KEY")!,
    VAPID_PRIVATE_KEY: vars.get("VAPID_PRIVATE_KEY")!,
  };
}

export interface WorkerOptions {
  secrets: Secrets;
  /** Folder for Durable Object state; omitted means in memory. */
  persistTo?: string;
  port?: number;
  vars?: Record<string, string>;
  /** Run the instrumented bundle: its objects answer `debugStats()` (counts of invocations and writes). */
  instrumented?: boolean;
  /** Open workerd's inspector (Chrome DevTools protocol) on this port, for profiling (bench/README.md). */
  inspectorPort?: number;
}

export interface RunningWorker {
  url: string;
  mf: Miniflare;
  dispose(): Promise<void>;
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const mf = new Miniflare({
    ...(options.persistTo ? { defaultPersistRoot: options.persistTo } : {}),
    ...(options.inspectorPort ? { inspectorPort: options.inspectorPort } : {}),
    host: "127.0.0.1",
    port: 0,
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      forwardRuntimeOutput(stdout, process.stdout);
      forwardRuntimeOutput(stderr, process.stderr);
    },
    workers: [
      {
        // Unnamed, as before there were two: Miniflare keeps a worker's objects under its name, and a
        // `.state/` written by an earlier `npm start` must keep its machines, sessions and tokens.
        modules: true,
        scriptPath: options.instrumented ? INSTRUMENTED_WORKER_BUNDLE : WORKER_BUNDLE,
        compatibilityDate: "2026-04-01",
        durableObjects: {
          MACHINE: { className: "MachineObject", useSQLite: true },
          TEAM: { className: "TeamObject", useSQLite: true },
          TOKEN: { className: "TokenObject", useSQLite: true },
        },
        // A runtime on this machine may notify this machine (webhooks on 127.0.0.1): never a deployment's setting.
        bindings: { ...options.secrets, DEFAULT_MACHINE: "", WEBHOOK_ALLOW_PRIVATE: "1", ...options.vars },
        serviceBindings: { ASSETS: STATIC_FILES_WORKER },
        // Serve our worker on its own socket: Miniflare's entry worker would add a hop (about half a
        // millisecond a request here) that a deployed worker does not have. The entry socket stays unused.
        unsafeDirectSockets: [{ host: "127.0.0.1", port: options.port ?? 0 }],
      },
      {
        // wrangler.toml's `[assets]` with `run_worker_first = true`: the worker asks ASSETS for its static files.
        // Given to the worker above as its own option, Miniflare would put its asset router in front of the
        // worker's direct socket too (two more hops on every API call, and a connection reset after a
        // refused body); here only what asks ASSETS goes through it.
        name: STATIC_FILES_WORKER,
        modules: true,
        script: "export default { fetch: (request, env) => env.FILES.fetch(request) };",
        compatibilityDate: "2026-04-01",
        assets: { directory: STATIC_FILES, binding: "FILES" },
      },
    ],
  });
  await mf.ready;
  const url = (await mf.unsafeGetDirectURL()).toString().replace(/\/$/, "");
  return { url, mf, dispose: () => mf.dispose() };
}

/**
 * workerd's own output, minus its report of a client that hung up mid-response (an SSE reader
 * leaving is normal, not an error): that report is two lines, the error and its stack.
 */
function forwardRuntimeOutput(from: Readable, to: NodeJS.WritableStream): void {
  let skipStack = false;
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    if (/disconnected: ::write\(fd, buffer.begin\(\), buffer.size\(\)\): Broken pipe|kj::getCaughtExceptionAsKj\(\) = .*disconnected/.test(line)) {
      skipStack = true;
      return;
    }
    if (skipStack && line.startsWith("stack: ")) {
      skipStack = false;
      return;
    }
    skipStack = false;
    to.write(`${line}\n`);
  });
}

export interface SidecarProcess {
  machine: string;
  child: ChildProcess;
  /** Everything the sidecar logged (stderr), for assertions and for failure reports. */
  logs(): string;
  /** Resolves once the sidecar logged that it is connected. */
  connected(timeoutMs?: number): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface SidecarOptions {
  url: string;
  machine: string;
  tunnelSecret: string;
  dataDir: string;
  workdir?: string;
  env?: Record<string, string>;
  /** Forward the sidecar's log lines to this process's stderr. */
  echo?: boolean;
  token?: string;
  /** The Node that runs the sidecar (default: this process's). */
  node?: string;
}

export async function startSidecar(options: SidecarOptions): Promise<SidecarProcess> {
  const token = options.token ?? (await mintMachineToken(options.tunnelSecret, options.machine));
  const child = spawn(
    options.node ?? process.execPath,
    [
      ...SIDECAR_NODE_FLAGS,
      // For profiling (bench/README.md): SIDECAR_PROFILE_DIR=/tmp/prof writes each sidecar's CPU profile there when it exits.
      ...(process.env.SIDECAR_PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-dir", process.env.SIDECAR_PROFILE_DIR] : []),
      SIDECAR_BUNDLE,
      "connect",
      "--url",
      options.url,
      "--machine",
      options.machine,
      "--token-stdin",
      "--data-dir",
      options.dataDir,
      ...(options.workdir ? ["--workdir", options.workdir] : []),
    ],
    { env: { ...process.env, ...options.env }, stdio: ["pipe", "pipe", "pipe"] },
  );
  // The token goes in through a pipe: never an argument or a variable, which agents could read.
  child.stdin!.on("error", () => undefined); // a sidecar that exits at once (bad usage) never reads it
  child.stdin!.end(`${token}\n`);
  let logs = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    logs += chunk.toString();
    if (options.echo) process.stderr.write(chunk);
    for (const waiter of waiters) waiter();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let connectCount = 0;
  return {
    machine: options.machine,
    child,
    logs: () => logs,
    connected(timeoutMs = 10_000) {
      const target = ++connectCount;
      const count = () => logs.split("connected to ").length - 1;
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (count() >= target) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`sidecar '${options.machine}' did not connect within ${timeoutMs} ms:\n${logs}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A free TCP port on 127.0.0.1 (for a second `npm start` beside one on 8787: the Node 24 step, its test). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
