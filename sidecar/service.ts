/**
 * Keep a machine connected across logouts and reboots: a systemd user unit on Linux, a launchd agent
 * on macOS, running `agent-runtime-sidecar connect` with what `login` stored. The unit restarts the
 * sidecar when it fails, but not when the worker refused its token (exit 2) or another sidecar took
 * over the machine (exit 3): restarting cannot help then.
 */
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { SIDECAR_NODE_FLAGS } from "./node-flags";

export const SERVICE_NAME = "agent-runtime-sidecar";
export const LAUNCHD_LABEL = "dev.agent-runtime.sidecar";

export type ServicePlatform = "linux" | "darwin";

export interface ServiceSpec {
  platform: ServicePlatform;
  /** The node binary and the sidecar script, as absolute paths. */
  node: string;
  script: string;
  configDir: string;
  dataDir: string;
  /** Working folder of agents. */
  workdir: string;
  home: string;
}

export function defaultServiceSpec(platform: ServicePlatform, configDir: string, dataDir: string, workdir: string | undefined): ServiceSpec {
  const home = homedir();
  return { platform, node: process.execPath, script: realpathSync(process.argv[1]!), configDir, dataDir, workdir: workdir ?? home, home };
}

export function servicePath(spec: Pick<ServiceSpec, "platform" | "home">): string {
  return spec.platform === "linux"
    ? join(process.env.XDG_CONFIG_HOME || join(spec.home, ".config"), "systemd", "user", `${SERVICE_NAME}.service`)
    : join(spec.home, "Library", "LaunchAgents", `${LAUNCHD_LABEL}.plist`);
}

/** Where the service's log goes. */
export function serviceLogs(spec: Pick<ServiceSpec, "platform" | "home">): string {
  return spec.platform === "linux" ? `journalctl --user -u ${SERVICE_NAME} -f` : join(spec.home, "Library", "Logs", `${SERVICE_NAME}.log`);
}

/** systemd quoting: every argument in double quotes, with `\`, `"` and `%` escaped. */
function systemdQuote(arg: string): string {
  return `"${arg.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%")}"`;
}

/** A path in a systemd setting that takes one path literally (not a command line): only `%` is special. */
function systemdPath(path: string): string {
  return path.replace(/%/g, "%%");
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function connectArgs(spec: ServiceSpec): string[] {
  return [spec.node, ...SIDECAR_NODE_FLAGS, spec.script, "connect", "--config-dir", spec.configDir, "--data-dir", spec.dataDir, "--workdir", spec.workdir];
}

/** npm and git must be found by the agents the sidecar starts: node's own folder first. */
function servicePathVariable(spec: ServiceSpec): string {
  return [...new Set([dirname(spec.node), "/usr/local/bin", "/usr/bin", "/bin", ...(spec.platform === "darwin" ? ["/opt/homebrew/bin"] : [])])].join(":");
}

export function serviceFile(spec: ServiceSpec): string {
  if (spec.platform === "linux") {
    return `[Unit]
Description=agent-runtime sidecar: runs coding agents on this machine for an agent-runtime worker
Documentation=https://www.npmjs.com/package/agent-runtime-sidecar
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=${connectArgs(spec).map(systemdQuote).join(" ")}
WorkingDirectory=${systemdPath(spec.workdir)}
Environment=${systemdQuote(`PATH=${servicePathVariable(spec)}`)}
# Agents' own credentials (ANTHROPIC_API_KEY=..., one per line), if you keep them in a file:
EnvironmentFile=-${systemdPath(join(spec.configDir, "agents.env"))}
Restart=on-failure
RestartSec=5
# 2: the worker refused the token (revoked or expired); 3: another sidecar took over this machine.
RestartPreventExitStatus=2 3
KillMode=mixed
TimeoutStopSec=15

[Install]
WantedBy=default.target
`;
  }
  const args = connectArgs(spec)
    .map((a) => `    <string>${xml(a)}</string>`)
    .join("\n");
  const log = xml(serviceLogs(spec));
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
${args}
  </array>
  <key>WorkingDirectory</key>
  <string>${xml(spec.workdir)}</string>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key>
    <string>${xml(servicePathVariable(spec))}</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ThrottleInterval</key>
  <integer>10</integer>
  <key>StandardOutPath</key>
  <string>${log}</string>
  <key>StandardErrorPath</key>
  <string>${log}</string>
</dict>
</plist>
`;
}

/** The commands that start (or stop) the service, in order. */
export function serviceCommands(spec: ServiceSpec, action: "install" | "uninstall"): string[][] {
  const path = servicePath(spec);
  if (spec.platform === "linux") {
    return action === "install"
      ? [
          ["systemctl", "--user", "daemon-reload"],
          ["systemctl", "--user", "enable", "--now", SERVICE_NAME],
          // Without lingering, a user's services stop at logout and start only at login.
          ["loginctl", "enable-linger", process.env.USER || "$USER"],
        ]
      : [
          ["systemctl", "--user", "disable", "--now", SERVICE_NAME],
          ["systemctl", "--user", "daemon-reload"],
        ];
  }
  const domain = `gui/${process.getuid?.() ?? "$(id -u)"}`;
  return action === "install" ? [["launchctl", "bootstrap", domain, path]] : [["launchctl", "bootout", `${domain}/${LAUNCHD_LABEL}`]];
}

/** Can this session talk to its service manager? (Not in a container without systemd, for instance.) */
export function serviceManagerReachable(platform: ServicePlatform): boolean {
  if (platform !== process.platform) return false;
  const probe =
    platform === "linux"
      ? spawnSync("systemctl", ["--user", "show-environment"], { stdio: "ignore", timeout: 5000 })
      : spawnSync("launchctl", ["print", `gui/${process.getuid?.()}`], { stdio: "ignore", timeout: 5000 });
  return probe.status === 0;
}

function run(commands: string[][]): { ran: string[]; failed: string | null } {
  const ran: string[] = [];
  for (const [cmd, ...args] of commands) {
    const result = spawnSync(cmd!, args, { encoding: "utf8", timeout: 30_000 });
    const line = [cmd, ...args].join(" ");
    if (result.status !== 0) return { ran, failed: `${line}: ${(result.stderr || result.error?.message || `exit ${result.status}`).trim()}` };
    ran.push(line);
  }
  return { ran, failed: null };
}

export interface ServiceReport {
  path: string;
  /** Commands that were run, or that the user should run (when the service manager is not reachable here). */
  ran: string[];
  toRun: string[];
  failed: string | null;
  logs: string;
}

export async function installService(spec: ServiceSpec): Promise<ServiceReport> {
  const path = servicePath(spec);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, serviceFile(spec), { mode: 0o644 });
  const commands = serviceCommands(spec, "install");
  const outcome = serviceManagerReachable(spec.platform) ? run(commands) : { ran: [], failed: null };
  const toRun = commands.slice(outcome.ran.length).map((c) => c.join(" "));
  return { path, ran: outcome.ran, toRun, failed: outcome.failed, logs: serviceLogs(spec) };
}

export async function uninstallService(spec: ServiceSpec): Promise<ServiceReport> {
  const path = servicePath(spec);
  const commands = serviceCommands(spec, "uninstall");
  // Stop it while its unit still exists, then remove the file.
  const outcome = serviceManagerReachable(spec.platform) && existsSync(path) ? run(commands) : { ran: [], failed: null };
  await rm(path, { force: true });
  return { path, ran: outcome.ran, toRun: commands.slice(outcome.ran.length).map((c) => c.join(" ")), failed: outcome.failed, logs: serviceLogs(spec) };
}

export function serviceState(spec: ServiceSpec): { path: string; installed: boolean; active: string } {
  const path = servicePath(spec);
  const installed = existsSync(path);
  if (!installed || !serviceManagerReachable(spec.platform))
    return { path, installed, active: installed ? "unknown (no service manager reachable from here)" : "not installed" };
  const probe =
    spec.platform === "linux"
      ? spawnSync("systemctl", ["--user", "is-active", SERVICE_NAME], { encoding: "utf8", timeout: 5000 })
      : spawnSync("launchctl", ["print", `gui/${process.getuid?.()}/${LAUNCHD_LABEL}`], { encoding: "utf8", timeout: 5000 });
  return { path, installed, active: spec.platform === "linux" ? probe.stdout.trim() || "unknown" : probe.status === 0 ? "loaded" : "not loaded" };
}
