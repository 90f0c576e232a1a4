#!/usr/bin/env node
/**
 * agent-runtime-sidecar: joins this machine to an agent-runtime worker.
 *
 *   agent-runtime-sidecar connect --url https://runtime.example.workers.dev --machine laptop --token mt1....
 *   agent-runtime-sidecar token --machine laptop        (prints a machine token; needs TUNNEL_SECRET)
 */
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { mintMachineToken } from "../src/protocol/machine-token";
import { Identifier } from "../src/protocol/resources";
import { setLogLevel, logger } from "./log";
import { Sidecar, type SidecarOptions } from "./sidecar";
import { SIDECAR_VERSION } from "./version";

const log = logger("sidecar");

const HELP = `agent-runtime-sidecar ${SIDECAR_VERSION}: run coding agents on this machine for an agent-runtime worker.

Usage:
  agent-runtime-sidecar connect --url <worker url> --machine <id> --token <machine token> [options]
  agent-runtime-sidecar token --machine <id>         print the machine token (reads TUNNEL_SECRET)

connect options (each also read from the environment variable shown):
  --url <url>          the worker, e.g. https://agent-runtime.example.workers.dev   AGENT_RUNTIME_URL
  --machine <id>       this machine's id (letters, digits, . _ -)                    AGENT_RUNTIME_MACHINE
  --token <token>      its machine token (from 'token' or your admin); prefer the    AGENT_RUNTIME_TOKEN
                       variable: arguments are visible to other users in 'ps'
  --data-dir <path>    where agents are installed (default ~/.agent-runtime)         AGENT_RUNTIME_DATA_DIR
  --workdir <path>     working directory of agent processes (default: current)       AGENT_RUNTIME_WORKDIR
  --log-level <level>  debug | info | warn | error (default info)                    SIDECAR_LOG_LEVEL
  -h, --help           this help

Signals: SIGINT/SIGTERM stop the agents and exit; SIGUSR2 drops the tunnel once (fault drill).
Exit codes: 0 stopped by a signal; 1 bad usage; 2 the worker refused the token (wrong, or revoked);
            3 another sidecar connected as the same machine and took over.`;

/** Limits from the environment (see the README's "Limits" table); unset means the default. */
function limitsFromEnv(): Pick<SidecarOptions, "processLimits" | "acpBuffer"> {
  const num = (name: string): number | undefined => {
    const raw = process.env[name];
    if (raw === undefined || raw === "") return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) fail(`${name} must be a positive whole number`);
    return n;
  };
  const pick = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
  return {
    processLimits: pick({
      maxRunning: num("AGENT_RUNTIME_MAX_PROCESSES"),
      maxExitedKept: num("AGENT_RUNTIME_MAX_EXITED_KEPT"),
      maxLogBytes: num("AGENT_RUNTIME_MAX_LOG_BYTES"),
      maxInputBytes: num("AGENT_RUNTIME_MAX_INPUT_BYTES"),
    }),
    acpBuffer: pick({ maxEvents: num("AGENT_RUNTIME_ACP_BUFFER_EVENTS"), maxBytes: num("AGENT_RUNTIME_ACP_BUFFER_BYTES") }),
  };
}

function fail(message: string): never {
  process.stderr.write(`${message}\n\nRun with --help for usage.\n`);
  process.exit(1);
}

// The sidecar moves many small short-lived strings: a small young generation keeps its memory
// near what it really holds (measured: see bench/README.md), at the cost of more frequent, tiny GCs.
setFlagsFromString("--max-semi-space-size=1");

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: "string" },
      machine: { type: "string" },
      token: { type: "string" },
      "data-dir": { type: "string" },
      workdir: { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(HELP + "\n");
    process.exit(values.help ? 0 : 1);
  }
  if (command !== "connect" && command !== "token") fail(`unknown command '${command}'`);
  const machine = values.machine ?? process.env.AGENT_RUNTIME_MACHINE;
  if (!machine || !Identifier.safeParse(machine).success) fail("--machine is required: letters, digits, '.', '_' or '-'");

  if (command === "token") {
    const secret = process.env.TUNNEL_SECRET;
    if (!secret) fail("set TUNNEL_SECRET (the worker's secret) to mint a machine token");
    process.stdout.write(`${await mintMachineToken(secret, machine)}\n`);
    return;
  }

  const url = values.url ?? process.env.AGENT_RUNTIME_URL;
  const token = values.token ?? process.env.AGENT_RUNTIME_TOKEN;
  // Agents and processes inherit this environment: the machine token and any worker secret stay here.
  delete process.env.AGENT_RUNTIME_TOKEN;
  delete process.env.TUNNEL_SECRET;
  delete process.env.API_TOKEN;
  if (!url || !/^https?:\/\//.test(url)) fail("--url is required: the worker's http(s) URL");
  if (!token) fail("--token is required: the machine token");
  const level = values["log-level"] ?? process.env.SIDECAR_LOG_LEVEL;
  if (level) {
    if (!["debug", "info", "warn", "error"].includes(level)) fail("--log-level is debug, info, warn or error");
    setLogLevel(level as "debug" | "info" | "warn" | "error");
  }
  const dataDir = values["data-dir"] ?? process.env.AGENT_RUNTIME_DATA_DIR;
  const workdir = values.workdir ?? process.env.AGENT_RUNTIME_WORKDIR;

  const sidecar = new Sidecar({
    url,
    machine,
    token,
    ...limitsFromEnv(),
    ...(dataDir ? { dataDir } : {}),
    ...(workdir ? { workdir } : {}),
    onRefused: () => {
      void sidecar.stop().then(() => process.exit(2));
    },
    onReplaced: () => {
      void sidecar.stop().then(() => process.exit(3));
    },
  });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: stopping agents and closing the tunnel`);
    void sidecar.stop().then(() => process.exit(0));
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  // Fault drill: cut the tunnel socket without a close handshake; the sidecar must come back by itself.
  process.on("SIGUSR2", () => {
    log.warn("SIGUSR2: dropping the tunnel (fault drill)");
    sidecar.tunnel.drop();
  });
  sidecar.start();
}

void main();
