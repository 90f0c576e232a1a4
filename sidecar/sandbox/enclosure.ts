/**
 * One agent's sandbox (docs/architecture.md, "Sandboxes"): the spec in force, the folders it may write
 * (the sessions' folders, added as sessions start), its private folder outside (the unreadable stand-in,
 * the egress proxy's socket) and its proxy. `wrap` turns an agent's launch into the same launch inside
 * bubblewrap; everything the agent starts (shells, tools, MCP servers) is inside with it.
 */
import { existsSync, statSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { builtinName } from "@agent-runtime/protocol/registry";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { AgentLaunch } from "../acp/agent-launch";
import { bwrapArgs, type EnclosurePaths, INGRESS_SCRIPT, proxyEnv } from "./bwrap-args";
import { firstChild, listensIn } from "./ingress";
import { type BlockedConnection, EgressProxy } from "./egress-proxy";
import { needsEnclosure, type SandboxTools } from "./platform";
import { seatbeltProfile } from "./seatbelt";

/** Never readable under `read-only` and `workspace`, relative to the home folder (SECURITY.md says why each). */
export const HOME_SECRETS = [
  ".ssh",
  ".aws",
  ".config/gcloud",
  ".azure",
  ".kube",
  ".docker/config.json",
  ".netrc",
  ".git-credentials",
  ".npmrc",
  ".pypirc",
  ".config/gh",
  ".config/hub",
  ".gnupg",
  ".password-store",
  ".vault-token",
  ".local/share/keyrings",
  ".pki",
  ".mozilla",
  ".config/google-chrome",
  ".config/chromium",
  ".config/BraveSoftware",
  ".config/microsoft-edge",
  "snap/chromium",
  "snap/firefox",
  "Library/Keychains",
  "Library/Cookies",
  "Library/Application Support/Google/Chrome",
  "Library/Application Support/Firefox",
  "Library/Application Support/BraveSoftware",
  "Library/Safari",
];

/** An agent's own state, writable inside so it can keep its sessions; its settings that run commands stay read-only. */
const AGENT_STATE: Partial<Record<string, { dirs: string[]; files: string[]; readOnly: string[] }>> = {
  claude: {
    dirs: [".claude"],
    files: [".claude.json"],
    readOnly: [
      ".claude/settings.json",
      ".claude/settings.local.json",
      ".claude/hooks",
      ".claude/commands",
      ".claude/agents",
      ".claude/skills",
      ".claude/plugins",
    ],
  },
  codex: { dirs: [".codex"], files: [], readOnly: [".codex/config.toml", ".codex/skills"] },
  gemini: { dirs: [".gemini"], files: [], readOnly: [".gemini/settings.json", ".gemini/skills"] },
};

/** Variables naming sockets of the person's session (an SSH agent, D-Bus): not passed into a sandbox. */
const SESSION_SOCKET_VARS = ["SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO", "XDG_RUNTIME_DIR", "TMUX", "KITTY_LISTEN_ON"];

export interface EnclosureContext {
  tools: SandboxTools;
  home: string;
  /** The sidecar's data folder (checkpoints, uploads, state): hidden but for the agents' installs. */
  dataDir: string;
  /** The sidecar's config folder (the machine token). */
  configDir: string;
  isRoot: boolean;
}

function expand(home: string, path: string): string {
  return path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : resolve(path);
}

function kindOf(path: string): "dir" | "file" | null {
  try {
    return statSync(path).isDirectory() ? "dir" : "file";
  } catch {
    return null;
  }
}

/**
 * A worktree's `.git` is a file naming its git folder inside the repository's: to commit there an agent
 * writes that folder and the repository's objects, refs and logs (never its hooks or config).
 */
async function worktreeGitDirs(folder: string): Promise<string[]> {
  const pointer = await readFile(join(folder, ".git"), "utf8").catch(() => null);
  const gitDir = pointer === null ? null : /^gitdir:\s*(.+)$/m.exec(pointer)?.[1]?.trim();
  if (!gitDir) return [];
  const own = resolve(folder, gitDir);
  const common = await readFile(join(own, "commondir"), "utf8").catch(() => null);
  if (common === null) return [own];
  const root = resolve(own, common.trim());
  return [own, ...["objects", "refs", "logs"].map((d) => join(root, d)).filter((d) => existsSync(d))];
}

export class Enclosure {
  private readonly folders = new Set<string>();
  private privateDir: string | null = null;
  private proxy: EgressProxy | null = null;
  /** macOS: the egress proxy's loopback port. */
  private proxyPort: number | null = null;
  /** The agent's process (bwrap's, outside): its first child is inside the sandbox's namespaces. */
  private pid: number | null = null;

  constructor(
    readonly spec: SandboxSpec,
    private readonly ctx: EnclosureContext,
    private readonly onBlocked: (blocked: BlockedConnection) => void,
    private readonly onDisposed: () => void = () => {},
  ) {}

  /** Whether anything is enforced at all (`full` with an open network runs as before). */
  get enforced(): boolean {
    return needsEnclosure(this.spec);
  }

  /** Can a session in `folder` work here as its profile says (its folder writable under `workspace`)? */
  covers(folder: string): boolean {
    if (this.spec.profile !== "workspace") return true;
    const target = resolve(folder);
    return [...this.folders].some((f) => target === f || target.startsWith(`${f}/`));
  }

  addFolder(folder: string): void {
    this.folders.add(resolve(folder));
  }

  get writableFolders(): string[] {
    return [...this.folders];
  }

  /** The agent's process now (bwrap, as started outside). */
  started(pid: number | null): void {
    this.pid = pid;
  }

  /** The socket outside through which a preview reaches this sandbox's loopback, when it has one of its own. */
  get ingressSocket(): string | null {
    return this.privateDir && this.enforced && this.spec.network.mode !== "open" && this.ctx.tools.socat ? join(this.privateDir, "ingress", "sock") : null;
  }

  /** Does something listen on `port` inside (on the sandbox's own loopback)? */
  async listensInside(port: number): Promise<boolean> {
    if (this.pid === null || this.ingressSocket === null) return false;
    const inner = await firstChild(this.pid);
    if (inner === null) return false;
    return listensIn(inner, port);
  }

  /** The launch inside the sandbox (unchanged when nothing is enforced). */
  async wrap(agent: AgentId, launch: AgentLaunch): Promise<AgentLaunch> {
    if (!this.enforced) return launch;
    const bwrap = this.ctx.tools.enclose;
    if (!bwrap) throw new Error("no sandbox tool (checked before)");
    if (!this.privateDir) {
      this.privateDir = await mkdtemp(join(tmpdir(), "agent-runtime-sandbox-"));
      await chmod(this.privateDir, 0o700);
      await writeFile(join(this.privateDir, "unreadable"), "", { mode: 0o000 });
    }
    let ingressDir: string | null = null;
    if (this.spec.network.mode !== "open" && this.ctx.tools.socat) {
      ingressDir = join(this.privateDir, "ingress");
      await mkdir(ingressDir, { recursive: true });
      await writeFile(join(ingressDir, "ingress.sh"), INGRESS_SCRIPT);
    }
    const seatbelt = this.ctx.tools.platform === "macos-seatbelt";
    let proxySocket: string | null = null;
    if (this.spec.network.mode === "allowlist") {
      proxySocket = seatbelt ? null : join(this.privateDir, "egress.sock");
      if (!this.proxy) {
        this.proxy = new EgressProxy(this.spec.network, this.onBlocked);
        this.proxyPort = await this.proxy.listen(proxySocket);
      }
    }
    if (seatbelt) return this.seatbelt(bwrap, agent, launch);
    const env: Record<string, string> = { ...launch.env, ...proxyEnv(this.spec), TMPDIR: "/tmp" };
    const paths = { ...(await this.paths(agent, launch, env, proxySocket)), ingressDir };
    const args = bwrapArgs(this.spec, paths, launch.command, launch.args, this.ctx.isRoot);
    const unset = SESSION_SOCKET_VARS.flatMap((name) => ["--unsetenv", name]);
    return { command: bwrap, args: [...unset, ...args], cwd: launch.cwd, env };
  }

  /** macOS: the same rules as a Seatbelt profile for `sandbox-exec -p` (sidecar/sandbox/seatbelt.ts). */
  private async seatbelt(sandboxExec: string, agent: AgentId, launch: AgentLaunch): Promise<AgentLaunch> {
    const tmp = join(this.privateDir!, "tmp");
    await mkdir(tmp, { recursive: true });
    const port = this.proxyPort;
    const env: Record<string, string> = { ...launch.env, ...proxyEnv(this.spec, port ?? undefined), TMPDIR: tmp };
    const paths = await this.paths(agent, launch, env, null);
    const profile = seatbeltProfile(this.spec, paths, { tmp, proxyPort: port });
    return { command: sandboxExec, args: ["-p", profile, launch.command, ...launch.args], cwd: launch.cwd, env };
  }

  private async paths(
    agent: AgentId,
    launch: AgentLaunch,
    env: Record<string, string>,
    proxySocket: string | null,
  ): Promise<Omit<EnclosurePaths, "ingressDir">> {
    const { home, dataDir, configDir } = this.ctx;
    const hiddenDirs: string[] = [];
    const hiddenFiles: string[] = [];
    const writable = [...this.folders];
    const writableFiles: string[] = [];
    const readOnlyInside: string[] = [];
    if (this.spec.profile !== "full") {
      const secrets = [...HOME_SECRETS.map((p) => join(home, p)), configDir, ...this.spec.denyRead.map((p) => expand(home, p))];
      for (const path of secrets) {
        const kind = kindOf(path);
        if (kind === "dir") hiddenDirs.push(path);
        else if (kind === "file") hiddenFiles.push(path);
      }
      // The data folder is hidden (checkpoints, uploads, the state file); the agents' installs are shown again.
      hiddenDirs.push(dataDir);
      const teamEnv = join(dataDir, "agents", "team-env.json");
      if (existsSync(teamEnv)) hiddenFiles.push(teamEnv);
      // By its built-in name: a registry agent (`claude-acp`) keeps its state where the built-in one does.
      const state = AGENT_STATE[builtinName(agent)];
      for (const dir of state?.dirs ?? []) {
        await mkdir(join(home, dir), { recursive: true }).catch(() => undefined);
        writable.push(join(home, dir));
      }
      for (const file of state?.files ?? []) if (existsSync(join(home, file))) writableFiles.push(join(home, file));
      for (const path of state?.readOnly ?? []) if (existsSync(join(home, path))) readOnlyInside.push(join(home, path));
      // The mock keeps its sessions in the data folder, as a real agent keeps its own in HOME.
      if (env.MOCK_AGENT_STATE_DIR) {
        await mkdir(env.MOCK_AGENT_STATE_DIR, { recursive: true });
        writable.push(env.MOCK_AGENT_STATE_DIR);
      }
      for (const folder of this.folders) {
        for (const inner of [".git/hooks", ".git/config"]) if (existsSync(join(folder, inner))) readOnlyInside.push(join(folder, inner));
        if (this.spec.profile === "workspace") writable.push(...(await worktreeGitDirs(folder)));
      }
    } else {
      for (const path of this.spec.denyRead.map((p) => expand(home, p))) {
        const kind = kindOf(path);
        if (kind === "dir") hiddenDirs.push(path);
        else if (kind === "file") hiddenFiles.push(path);
      }
    }
    const program = [launch.command, ...launch.args.filter((a) => isAbsolute(a))].filter((p) => isAbsolute(p)).map((p) => dirname(p));
    return {
      hiddenDirs,
      hiddenFiles,
      standIn: join(this.privateDir!, "unreadable"),
      reveal: this.spec.profile === "full" ? [] : [join(dataDir, "agents")].filter((p) => existsSync(p)),
      keep: [home, launch.cwd, ...program, dirname(process.execPath)],
      writable,
      writableFiles,
      readOnlyInside,
      proxySocket,
      cwd: launch.cwd,
    };
  }

  async dispose(): Promise<void> {
    this.onDisposed();
    const dir = this.privateDir;
    this.privateDir = null;
    await this.proxy?.close(null);
    this.proxy = null;
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}
