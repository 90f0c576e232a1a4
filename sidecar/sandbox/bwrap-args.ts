/**
 * The bubblewrap command line of one sandbox (docs/architecture.md, "Sandboxes"), built from the rules
 * alone so that it can be read and tested as text. Mounts apply in order, a later one over an earlier:
 * the whole machine read-only (or writable under `full`), private `/tmp` and `/run` (no other program's
 * sockets: a user's tmux, D-Bus or Docker socket would be a way out), the secrets hidden behind
 * unreadable stand-ins, then the writable folders, then inside them what stays read-only (`.git/hooks`,
 * `.git/config`). With a network other than `open`, its own network namespace: only loopback, and with
 * an allowlist a socat inside bridging a loopback port to the egress proxy's socket outside.
 */
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";

/** The loopback port inside the sandbox where the egress proxy answers (the sandbox has a loopback of its own). */
export const PROXY_PORT_INSIDE = 3128;
/** Where the proxy's socket appears inside the sandbox. */
export const PROXY_SOCKET_INSIDE = "/run/agent-runtime-egress.sock";
/** Where the preview ingress lives inside (its socket, made by socat inside, is seen outside in the same folder). */
export const INGRESS_DIR_INSIDE = "/run/agent-runtime-ingress";

/** Run inside for each preview connection: the first line is the port, then the bytes go to the sandbox's loopback. */
export const INGRESS_SCRIPT = `read -r port
case "$port" in ""|*[!0-9]*) exit 1;; esac
exec socat STDIO TCP4:127.0.0.1:"$port"
`;

export interface EnclosurePaths {
  /** Hidden folders: an empty folder nobody can open stands in for each. */
  hiddenDirs: string[];
  /** Hidden files: an unreadable empty file stands in for each. */
  hiddenFiles: string[];
  /** The unreadable empty file (outside the sandbox) bound over hidden files. */
  standIn: string;
  /** Folders under a hidden one shown again, read-only (the agents' installs inside the sidecar's data folder). */
  reveal: string[];
  /** Paths under /tmp or /run that must stay visible read-only (the home folder, the agent's program). */
  keep: string[];
  /** Writable folders: the sessions' folders, the agent's own state. */
  writable: string[];
  /** Writable single files (an agent's own state file, e.g. ~/.claude.json). */
  writableFiles: string[];
  /** Inside writable folders, what stays read-only. */
  readOnlyInside: string[];
  /** The egress proxy's unix socket outside (allowlist only). */
  proxySocket: string | null;
  /** A folder outside (holding INGRESS_SCRIPT as ingress.sh) where previews reach the sandbox's own loopback; null: none. */
  ingressDir: string | null;
  cwd: string;
}

const TMP_ROOTS = ["/tmp", "/run", "/var/tmp", "/dev/shm"];

function under(root: string, path: string): boolean {
  return path === root || path.startsWith(`${root}/`);
}

/** The bwrap arguments (before `--`) for `spec`, and the command that runs inside (socat first for an allowlist). */
export function bwrapArgs(spec: SandboxSpec, paths: EnclosurePaths, command: string, args: string[], isRoot: boolean): string[] {
  const out: string[] = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];
  // As root, bwrap keeps capabilities unless told: without this an agent could remount / writable.
  if (isRoot) out.push("--cap-drop", "ALL");
  if (spec.network.mode !== "open") out.push("--unshare-net");
  out.push(spec.profile === "full" ? "--bind" : "--ro-bind", "/", "/");
  out.push("--dev", "/dev", "--proc", "/proc");
  if (spec.profile !== "full") {
    for (const root of TMP_ROOTS) out.push("--tmpfs", root);
    // Under a private /tmp and /run, what must stay visible: parents first, so a child's mount is not covered.
    for (const path of [...new Set(paths.keep)].filter((p) => TMP_ROOTS.some((r) => under(r, p))).sort()) out.push("--ro-bind-try", path, path);
    if (spec.network.mode === "open") out.push("--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve");
  }
  // The rest in order of depth, a folder before what is inside it, so that the most specific rule holds
  // for every path: a secret inside a writable folder stays hidden, a worktree inside the hidden data
  // folder stays writable. On the same path, a secret wins.
  const shownInside = (dir: string) => [...paths.reveal, ...paths.writable].some((p) => p !== dir && under(dir, p));
  const writes = spec.profile !== "read-only";
  const rules: { path: string; rank: number; args: string[] }[] = [
    ...(writes ? paths.writable.map((d) => ({ path: d, rank: 0, args: ["--bind-try", d, d] })) : []),
    ...(writes ? paths.writableFiles.map((f) => ({ path: f, rank: 0, args: ["--bind-try", f, f] })) : []),
    ...paths.reveal.map((d) => ({ path: d, rank: 1, args: ["--ro-bind-try", d, d] })),
    ...paths.hiddenDirs.map((d) => ({ path: d, rank: 2, args: ["--perms", shownInside(d) ? "0111" : "0000", "--tmpfs", d] })),
    ...paths.hiddenFiles.map((f) => ({ path: f, rank: 2, args: ["--ro-bind", paths.standIn, f] })),
    ...paths.readOnlyInside.map((p) => ({ path: p, rank: 3, args: ["--ro-bind-try", p, p] })),
  ];
  const depth = (p: string) => p.split("/").filter(Boolean).length;
  rules.sort((a, b) => depth(a.path) - depth(b.path) || a.rank - b.rank);
  for (const rule of rules) out.push(...rule.args);
  const egress = spec.network.mode === "allowlist" && paths.proxySocket !== null;
  const ingress = spec.network.mode !== "open" && paths.ingressDir !== null;
  if (egress) out.push("--bind", paths.proxySocket!, PROXY_SOCKET_INSIDE);
  if (ingress) out.push("--bind", paths.ingressDir!, INGRESS_DIR_INSIDE);
  out.push("--chdir", paths.cwd, "--");
  if (!egress && !ingress) return [...out, command, ...args];
  const script: string[] = [];
  // Previews: an app the agent serves on its own loopback is reached through this socket (sidecar/sandbox/ingress.ts).
  if (ingress) script.push(`socat UNIX-LISTEN:${INGRESS_DIR_INSIDE}/sock,fork,unlink-early 'EXEC:/bin/sh ${INGRESS_DIR_INSIDE}/ingress.sh' &`);
  if (egress) {
    // socat listens on the sandbox's loopback and carries each connection to the proxy's socket; the agent
    // starts once it listens (a client's first request must not find nothing there).
    const port = PROXY_PORT_INSIDE.toString(16).toUpperCase().padStart(4, "0");
    script.push(
      `socat TCP-LISTEN:${PROXY_PORT_INSIDE},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${PROXY_SOCKET_INSIDE} &`,
      "bridge=$!",
      `until grep -q ':${port} 00000000:0000 0A' /proc/net/tcp; do kill -0 "$bridge" 2>/dev/null || { echo 'agent-runtime: the egress bridge (socat) did not start' >&2; exit 127; }; done`,
    );
  }
  script.push('exec "$@"');
  return [...out, "/bin/sh", "-c", script.join("\n"), "agent-runtime-sandbox", command, ...args];
}

/** The proxy variables an agent's HTTP clients honour; loopback goes through the proxy when the allowlist names a loopback port. */
export function proxyEnv(spec: SandboxSpec, port = PROXY_PORT_INSIDE): Record<string, string> {
  if (spec.network.mode !== "allowlist") return {};
  const url = `http://127.0.0.1:${port}`;
  const loopbackListed = spec.network.allow.some((h) => isLoopbackHost(hostOf(h)));
  const noProxy = loopbackListed ? "" : "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    // Node 24's fetch honours the variables only when asked.
    NODE_USE_ENV_PROXY: "1",
  };
}

/** The host of an allowlist entry (`[::1]:8080` → `::1`, `github.com:443` → `github.com`). */
export function hostOf(entry: string): string {
  if (entry.startsWith("[")) return entry.slice(1, entry.indexOf("]"));
  const colon = entry.lastIndexOf(":");
  return colon === -1 ? entry : entry.slice(0, colon);
}

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === "localhost" || h.endsWith(".localhost") || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === "0.0.0.0";
}
