/**
 * The macOS form of a sandbox (docs/architecture.md, "Sandboxes"): a Seatbelt profile for `sandbox-exec`,
 * generated from the same rules as bubblewrap's mounts (`EnclosurePaths`). Seatbelt's last matching rule
 * wins, so rules are written in order of depth as bubblewrap's mounts are: the most specific holds, and
 * on one path a secret wins. macOS has no network namespace for an unprivileged process: with an
 * allowlist, the agent may reach only the egress proxy's loopback port, and the proxy decides the rest;
 * with `none`, nothing but local unix sockets. Tested as generated text: no macOS machine ran it here.
 */
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import type { EnclosurePaths } from "./bwrap-args";

/** A string as Seatbelt's profile language reads it. */
function quoted(path: string): string {
  return `"${path.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function under(root: string, path: string): boolean {
  return path === root || path.startsWith(`${root}/`);
}

export interface SeatbeltOptions {
  /** The private temporary folder (TMPDIR) the agent may write under every profile. */
  tmp: string;
  /** With an allowlist: the egress proxy's port on 127.0.0.1. */
  proxyPort: number | null;
}

/** The profile text for `sandbox-exec -p`. */
export function seatbeltProfile(
  spec: SandboxSpec,
  paths: Omit<EnclosurePaths, "proxySocket" | "ingressDir" | "standIn" | "keep" | "cwd">,
  options: SeatbeltOptions,
): string {
  const lines = [
    "(version 1)",
    "(deny default)",
    '(import "system.sb")',
    "(allow process-fork)",
    "(allow process-exec)",
    "(allow signal (target same-sandbox))",
    "(allow sysctl-read)",
    "(allow mach-lookup)",
    "(allow ipc-posix-shm)",
    "(allow pseudo-tty)",
    "(allow file-ioctl)",
    "(allow file-read*)",
    spec.profile === "full" ? "(allow file-write*)" : '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))',
    `(allow file-write* (subpath ${quoted(options.tmp)}))`,
  ];
  const writes = spec.profile !== "read-only";
  const rules: { path: string; rank: number; text: string }[] = [
    ...(writes ? [...paths.writable, ...paths.writableFiles].map((p) => ({ path: p, rank: 0, text: `(allow file-write* (subpath ${quoted(p)}))` })) : []),
    ...paths.reveal.map((p) => ({ path: p, rank: 1, text: `(allow file-read* (subpath ${quoted(p)}))` })),
    ...paths.hiddenDirs.map((p) => ({ path: p, rank: 2, text: `(deny file-read* file-write* (subpath ${quoted(p)}))` })),
    ...paths.hiddenFiles.map((p) => ({ path: p, rank: 2, text: `(deny file-read* file-write* (literal ${quoted(p)}))` })),
    ...paths.readOnlyInside.map((p) => ({ path: p, rank: 3, text: `(deny file-write* (subpath ${quoted(p)}))` })),
  ];
  const depth = (p: string) => p.split("/").filter(Boolean).length;
  rules.sort((a, b) => depth(a.path) - depth(b.path) || a.rank - b.rank);
  // A hidden folder with something shown again inside: the way through stays (metadata), its contents do not.
  for (const rule of rules) {
    lines.push(rule.text);
    if (rule.rank === 2 && [...paths.reveal, ...paths.writable].some((p) => p !== rule.path && under(rule.path, p))) {
      lines.push(`(allow file-read-metadata (literal ${quoted(rule.path)}))`);
    }
  }
  if (spec.network.mode === "open") lines.push("(allow network*)");
  else {
    lines.push('(allow network* (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))');
    if (spec.network.mode === "allowlist" && options.proxyPort !== null) {
      lines.push(`(allow network-outbound (remote tcp ${quoted(`localhost:${options.proxyPort}`)}))`);
    }
    // The agent's own servers (a dev server for a preview) may listen on loopback and be reached there.
    lines.push('(allow network-bind network-inbound (local tcp "localhost:*"))');
  }
  return `${lines.join("\n")}\n`;
}
