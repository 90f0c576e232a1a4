#!/usr/bin/env node
/**
 * agent-runtime-sidecar: joins this machine to an agent-runtime worker.
 *
 *   echo mt2.… | agent-runtime-sidecar login --url https://runtime.example.workers.dev --machine laptop
 *   agent-runtime-sidecar connect
 *   agent-runtime-sidecar token --machine laptop        (prints a machine token; needs TUNNEL_SECRET)
 */
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { defaultConfigDir, firstLine, loadCredentials, readPrivateFile, saveCredentials } from "./credentials";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { Identifier } from "@agent-runtime/protocol/values";
import { errorText, levelNamed, logger, setLogLevel } from "./log";
import { installService, serviceState, uninstallService, defaultServiceSpec, type ServiceSpec } from "./service";
import { defaultDataDir, Sidecar, type SidecarOptions } from "./sidecar";
import { isAlive, readStatus } from "./status-file";
import { readInstalled } from "./agents/installer";
import { listRegistryInstalled } from "./agents/registry-install";
import { BUILTIN_AGENT_IDS } from "@agent-runtime/protocol/values";
import { SIDECAR_VERSION } from "./version";
import { ExposedPorts } from "./preview/exposed-ports";
import { homedir } from "node:os";
import { join } from "node:path";
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { ownerLimits, OwnerLimitsError, readOwnerLimitsFile, type OwnerLimits } from "./sandbox/owner-limits";

const log = logger("sidecar");

const HELP = `agent-runtime-sidecar ${SIDECAR_VERSION}: run coding agents on this machine for an agent-runtime worker.

Usage:
  agent-runtime-sidecar login --url <worker url> --machine <id>    reads the machine token from stdin and
                                                                   stores it (0600) with the url and machine
  agent-runtime-sidecar connect [options]                          connects with what login stored, or:
  agent-runtime-sidecar connect --url <url> --machine <id> (--token-file <path> | --token-stdin) [options]
  agent-runtime-sidecar status                                     connected? to what? agents installed? last error
  agent-runtime-sidecar service install|uninstall|status [--platform linux|darwin]
                                                                   keep it connected across logouts and reboots
                                                                   (systemd user unit on Linux, launchd agent on macOS)
  agent-runtime-sidecar token --machine <id> [--generation <n>] [--expires-in <seconds>]
                                                                   print a machine token (reads TUNNEL_SECRET); after a
                                                                   revocation, pass the machine's current generation

Where the machine token comes from (never an argument or an environment variable: both stay readable
by every process of yours, agents included, in 'ps' and /proc/<pid>/environ):
  --token-stdin        the first line of standard input
  --token-file <path>  a file only you can read (chmod 600)
  (neither)            what 'login' stored in <config dir>/credentials.json

Options (each also read from the environment variable shown):
  --url <url>          the worker, e.g. https://agent-runtime.example.workers.dev   AGENT_RUNTIME_URL
  --machine <id>       this machine's id (letters, digits, . _ -)                    AGENT_RUNTIME_MACHINE
  --config-dir <path>  where login stores credentials (default ~/.config/agent-runtime) AGENT_RUNTIME_CONFIG_DIR
  --data-dir <path>    where agents are installed (default ~/.agent-runtime)         AGENT_RUNTIME_DATA_DIR
  --workdir <path>     working directory of agent processes (default: current)       AGENT_RUNTIME_WORKDIR
  --allow-root-agents  when run as root, let agents that refuse root run anyway        AGENT_RUNTIME_ALLOW_ROOT_AGENTS=1
                       (Claude Code: its permission bypass then works as root; for containers)
  --agent-node <path>  a Node for agents whose package needs a newer one than this   AGENT_RUNTIME_AGENT_NODE
                       sidecar's (e.g. claude-agent-acp needs Node 22 or later)
  --expose-ports <list> ports the hosted URL may preview, e.g. 3000-3999,5173 (none  AGENT_RUNTIME_EXPOSE_PORTS
                       by default; nothing on the hosted side can widen it)
  --sandbox <profile>  the least every agent is enclosed in: read-only | workspace  AGENT_RUNTIME_SANDBOX
                       | full (default full; a team's stricter rule still applies)
  --allow-network <l>  the most any agent may reach: none, or hosts and host:port   AGENT_RUNTIME_ALLOW_NETWORK
                       (e.g. api.anthropic.com,registry.npmjs.org,127.0.0.1:8080)
  --deny <list>        capabilities the hosted side loses: processes, terminal,     AGENT_RUNTIME_DENY
                       files, agents-install (each refused with a 403)
  --roots <list>       the only folders sessions, worktrees, file and git routes    AGENT_RUNTIME_ROOTS
                       may name, e.g. ~/code,~/work (default: any)
                       (the four above can also be set in <config dir>/sandbox.json; nothing hosted loosens them)
  --log-level <level>  debug | info | warn | error (default info)                    SIDECAR_LOG_LEVEL
  -h, --help           this help

Signals: SIGINT/SIGTERM stop the agents and exit; SIGUSR2 drops the tunnel once (fault drill).
Exit codes: 0 stopped by a signal; 1 bad usage; 2 the worker refused the token (wrong, expired or revoked);
            3 another sidecar connected as the same machine and took over.`;

/** Limits from the environment (docs/limits.md, "Limits"); unset means the default. */
function limitsFromEnv(): Pick<SidecarOptions, "processLimits" | "acpBuffer" | "heartbeatMs" | "reconnectSpreadMs" | "agentIdleStopMs"> {
  const num = (name: string): number | undefined => {
    const raw = process.env[name];
    if (raw === undefined || raw === "") return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) fail(`${name} must be a positive whole number`);
    return n;
  };
  // Object.fromEntries forgets the keys' types; only entries of `o` are kept, so each is of Partial<T>.
  const pick = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
  return {
    processLimits: pick({
      maxConcurrentProcesses: num("AGENT_RUNTIME_MAX_PROCESSES"),
      maxExitedKept: num("AGENT_RUNTIME_MAX_EXITED_KEPT"),
      maxLogBytesPerProcess: num("AGENT_RUNTIME_MAX_LOG_BYTES"),
      maxInputBytesPerRequest: num("AGENT_RUNTIME_MAX_INPUT_BYTES"),
    }),
    acpBuffer: pick({ maxEvents: num("AGENT_RUNTIME_ACP_BUFFER_EVENTS"), maxBytes: num("AGENT_RUNTIME_ACP_BUFFER_BYTES") }),
    ...pick({ heartbeatMs: num("AGENT_RUNTIME_HEARTBEAT_MS"), reconnectSpreadMs: num("AGENT_RUNTIME_RECONNECT_SPREAD_MS") }),
    // 0 keeps idle agents running for ever.
    ...pick({ agentIdleStopMs: process.env.AGENT_IDLE_STOP_MS === "0" ? 0 : num("AGENT_IDLE_STOP_MS") }),
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
      "token-file": { type: "string" },
      "token-stdin": { type: "boolean" },
      generation: { type: "string" },
      "expires-in": { type: "string" },
      platform: { type: "string" },
      "config-dir": { type: "string" },
      "data-dir": { type: "string" },
      workdir: { type: "string" },
      "allow-root-agents": { type: "boolean" },
      "agent-node": { type: "string" },
      "expose-ports": { type: "string" },
      sandbox: { type: "string" },
      "allow-network": { type: "string" },
      deny: { type: "string" },
      roots: { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${HELP}\n`);
    process.exit(values.help ? 0 : 1);
  }
  if (!["connect", "token", "login", "status", "service"].includes(command)) fail(`unknown command '${command}'`);
  const configDir = values["config-dir"] ?? process.env.AGENT_RUNTIME_CONFIG_DIR ?? defaultConfigDir();
  const dataDir = values["data-dir"] ?? process.env.AGENT_RUNTIME_DATA_DIR;
  const workdir = values.workdir ?? process.env.AGENT_RUNTIME_WORKDIR;

  if (command === "status") {
    process.stdout.write(await statusReport(configDir, dataDir ?? defaultDataDir()));
    return;
  }
  if (command === "service") {
    const action = positionals[1];
    if (action !== "install" && action !== "uninstall" && action !== "status") fail("service takes install, uninstall or status");
    const platform = values.platform ?? process.platform;
    if (platform !== "linux" && platform !== "darwin") fail(`services are for linux (systemd) and darwin (launchd), not '${platform}'`);
    process.stdout.write(await serviceCommand(action, defaultServiceSpec(platform, configDir, dataDir ?? defaultDataDir(), workdir)));
    return;
  }

  if (command === "token") {
    const machine = machineFlag(values.machine);
    const secret = process.env.TUNNEL_SECRET;
    if (!secret) fail("set TUNNEL_SECRET (the worker's secret) to mint a machine token");
    const generation = positiveInteger("--generation", values.generation) ?? 1;
    const expiresIn = positiveInteger("--expires-in", values["expires-in"]);
    process.stdout.write(`${await mintMachineToken(secret, machine, { generation, expiresAtMs: expiresIn ? Date.now() + expiresIn * 1000 : null })}\n`);
    return;
  }
  if (values.token !== undefined || process.env.AGENT_RUNTIME_TOKEN !== undefined) {
    fail(
      `a machine token is not taken from ${values.token !== undefined ? "--token" : "AGENT_RUNTIME_TOKEN"}: every process of this user, agents included, could read it (ps, /proc/<pid>/environ). Use --token-stdin, --token-file or 'login'`,
    );
  }

  if (command === "login") {
    const url = urlFlag(values.url);
    const machine = machineFlag(values.machine);
    const token = await readTokenFromStdin();
    const path = await saveCredentials(configDir, { url, machine, token });
    process.stdout.write(`saved the token of machine '${machine}' for ${url} in ${path} (readable by you only)\nnow run: agent-runtime-sidecar connect\n`);
    return;
  }

  // The worker's secrets must never sit in this process's environment: agents could read them from /proc.
  for (const name of ["TUNNEL_SECRET", "API_TOKEN"]) {
    if (process.env[name]) fail(`${name} is set in this environment; unset it for the sidecar: every agent it starts could read it from /proc/<pid>/environ`);
  }
  const saved = values["token-stdin"] || values["token-file"] ? null : await loadCredentials(configDir).catch((err: Error) => fail(err.message));
  const url = urlFlag(values.url ?? process.env.AGENT_RUNTIME_URL ?? saved?.url);
  const machine = machineFlag(values.machine ?? process.env.AGENT_RUNTIME_MACHINE ?? saved?.machine);
  let token: string;
  if (values["token-stdin"]) token = await readTokenFromStdin();
  else if (values["token-file"]) token = await readTokenFile(values["token-file"]);
  else if (saved) token = saved.token;
  else fail(`no machine token: pass --token-stdin or --token-file, or run 'login' first (nothing stored in ${configDir})`);
  const level = values["log-level"] ?? process.env.SIDECAR_LOG_LEVEL;
  if (level) {
    const named = levelNamed(level);
    if (!named) fail("--log-level is debug, info, warn or error");
    setLogLevel(named);
  }
  const limits = await readOwnerLimits(configDir, values);
  const sidecar = new Sidecar({
    ownerLimits: limits,
    configDir,
    url,
    machine,
    token,
    ...limitsFromEnv(),
    ...(dataDir ? { dataDir } : {}),
    ...(workdir ? { workdir } : {}),
    allowRootAgents: values["allow-root-agents"] === true || process.env.AGENT_RUNTIME_ALLOW_ROOT_AGENTS === "1",
    agentNode: values["agent-node"] ?? process.env.AGENT_RUNTIME_AGENT_NODE ?? null,
    exposePorts: exposedPorts(values["expose-ports"] ?? process.env.AGENT_RUNTIME_EXPOSE_PORTS ?? ""),
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

async function statusReport(configDir: string, dataDir: string): Promise<string> {
  const saved = await loadCredentials(configDir).catch((err: Error) => ({ error: err.message }));
  const status = await readStatus(dataDir);
  const lines: string[] = [];
  if (saved && "error" in saved) lines.push(`login:      ${saved.error}`);
  else lines.push(`login:      ${saved ? `machine '${saved.machine}' for ${saved.url}` : `none stored in ${configDir}`}`);
  if (!status) lines.push(`sidecar:    never ran with data folder ${dataDir}`);
  else {
    const running = status.state !== "stopped" && isAlive(status.pid);
    const state = running ? status.state : status.state === "refused" || status.state === "replaced" ? `${status.state} (exited)` : "not running";
    lines.push(`sidecar:    ${state} since ${new Date(status.sinceMs).toISOString()}${running ? ` (pid ${status.pid})` : ""}`);
    lines.push(`connected:  ${running && status.state === "connected" ? `yes, to ${status.url} as '${status.machine}'` : "no"}`);
    lines.push(`version:    ${status.sidecarVersion}${status.upgrade ? ` (outdated: ${status.upgrade})` : ""}`);
    if (status.sandbox) lines.push(...sandboxLines(status.sandbox));
    lines.push(`last error: ${status.lastError ? `${status.lastError.message} (${new Date(status.lastError.atMs).toISOString()})` : "none"}`);
  }
  const agents: string[] = [];
  for (const agent of BUILTIN_AGENT_IDS) {
    if (agent === "mock" || agent === "mock-login") continue;
    const installed = await readInstalled(dataDir, agent);
    if (installed) agents.push(`${agent} ${installed.native?.version ?? installed.agentProcess?.version ?? ""}`.trim());
  }
  for (const installed of await listRegistryInstalled(dataDir)) agents.push(`${installed.id} ${installed.version} (${installed.kind})`);
  lines.push(`agents:     mock (built in)${agents.length ? `, ${agents.join(", ")}` : ""}`);
  return `${lines.join("\n")}\n`;
}

/** What `status` says of the machine's sandbox: what it can enforce, what is missing, the owner's limits. */
function sandboxLines(sandbox: MachineSandbox): string[] {
  const { floor } = sandbox;
  const network = floor.network.mode === "allowlist" ? `allowlist ${floor.network.allow.join(",") || "(empty)"}` : floor.network.mode;
  return [
    `sandbox:    ${sandbox.platform}; can enforce ${sandbox.enforceable.join(", ")}${sandbox.missing ? ` (missing: ${sandbox.missing})` : ""}`,
    `floor:      ${floor.profile}, network ${network}${floor.denyRead.length ? `, never readable ${floor.denyRead.join(",")}` : ""}`,
    `denied:     ${sandbox.deny.length ? sandbox.deny.join(", ") : "nothing"}`,
    `roots:      ${sandbox.roots.length ? sandbox.roots.join(", ") : "any folder"}`,
  ];
}

async function serviceCommand(action: "install" | "uninstall" | "status", spec: ServiceSpec): Promise<string> {
  if (action === "status") {
    const state = serviceState(spec);
    return `service file: ${state.path} (${state.installed ? "installed" : "not installed"})\nstate:        ${state.active}\n`;
  }
  if (action === "install" && !(await loadCredentials(spec.configDir).catch(() => null))) {
    fail(`run 'login' first: the service connects with what login stores in ${spec.configDir}`);
  }
  if (action === "install" && /[\\/]_npx[\\/]/.test(spec.script)) {
    process.stderr.write(
      `note: ${spec.script} is in npx's cache, which npm may clean; for a service, 'npm install -g agent-runtime-sidecar' and run 'agent-runtime-sidecar service install' again\n`,
    );
  }
  const report = action === "install" ? await installService(spec) : await uninstallService(spec);
  const out = [`${action === "install" ? "wrote" : "removed"} ${report.path}`];
  for (const line of report.ran) out.push(`ran: ${line}`);
  if (report.failed) out.push(`failed: ${report.failed}`);
  if (report.toRun.length) out.push(`${report.failed ? "then run" : "now run"}:`, ...report.toRun.map((c) => `  ${c}`));
  if (action === "install") out.push(`logs: ${report.logs}`);
  return `${out.join("\n")}\n`;
}

function positiveInteger(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,9}$/.test(value)) fail(`${flag} is a positive whole number`);
  return Number(value);
}

/** The owner's sandbox floor, `--deny` and `--roots`: flags, then the environment, then <config dir>/sandbox.json. */
async function readOwnerLimits(configDir: string, values: Record<string, string | boolean | undefined>): Promise<OwnerLimits> {
  const flag = (name: string, env: string): string | undefined => {
    const v = values[name];
    return typeof v === "string" ? v : process.env[env];
  };
  try {
    const file = await readOwnerLimitsFile(join(configDir, "sandbox.json"));
    return ownerLimits(
      {
        sandbox: flag("sandbox", "AGENT_RUNTIME_SANDBOX"),
        allowNetwork: flag("allow-network", "AGENT_RUNTIME_ALLOW_NETWORK"),
        deny: flag("deny", "AGENT_RUNTIME_DENY"),
        roots: flag("roots", "AGENT_RUNTIME_ROOTS"),
      },
      file,
      homedir(),
    );
  } catch (err) {
    if (err instanceof OwnerLimitsError) fail(err.message);
    throw err;
  }
}

function exposedPorts(value: string): ExposedPorts {
  try {
    return ExposedPorts.parse(value);
  } catch (err) {
    return fail(`--expose-ports: ${errorText(err)}`);
  }
}

function machineFlag(value: string | undefined): string {
  if (!value || !Identifier.safeParse(value).success) fail("--machine is required: letters, digits, '.', '_' or '-'");
  return value;
}

function urlFlag(value: string | undefined): string {
  if (!value || !/^https?:\/\/[^\s]+$/.test(value)) fail("--url is required: the worker's http(s) URL");
  return value.replace(/\/+$/, "");
}

async function readTokenFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write("machine token: ");
  const token = await firstLine(process.stdin);
  if (!token) fail("no machine token on standard input");
  return token;
}

async function readTokenFile(path: string): Promise<string> {
  try {
    return await readPrivateFile(path);
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
}

void main();
