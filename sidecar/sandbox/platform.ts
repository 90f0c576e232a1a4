/**
 * What this machine can enforce (docs/architecture.md, "Sandboxes"): on Linux, bubblewrap that can make
 * its namespaces (user namespaces switched on, or run as root) and socat to bridge the egress proxy in;
 * on macOS, sandbox-exec. Probed by running them once, not by reading version strings: a `bwrap` that
 * exists but cannot unshare is as good as none. A profile asked for that cannot be enforced is refused
 * with what to install, never quietly run as `full`.
 */
import { execFile } from "node:child_process";
import type { MachineSandbox, SandboxSpec } from "@agent-runtime/protocol/sandbox";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { whichExecutable } from "../processes/processes";
import type { OwnerLimits } from "./owner-limits";

export interface SandboxTools {
  platform: MachineSandbox["platform"];
  /** bwrap's or sandbox-exec's path; null when missing or unusable. */
  enclose: string | null;
  /** socat's path (Linux: bridges the egress proxy into the sandbox's network namespace). */
  socat: string | null;
  /** What to install or switch on; null when everything is there. */
  missing: string | null;
}

function run(command: string, args: string[]): Promise<{ ok: boolean; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 10_000 }, (err, _stdout, stderr) => resolve({ ok: !err, stderr: String(stderr).trim() }));
  });
}

const LINUX_HINT = "install bubblewrap and socat (Debian/Ubuntu: sudo apt-get install bubblewrap socat; Fedora: sudo dnf install bubblewrap socat)";

/** Look for the tools on `path` and try them once. */
export async function probeSandboxTools(path = process.env.PATH ?? "", platform = process.platform): Promise<SandboxTools> {
  if (platform === "darwin") {
    const exec = await whichExecutable("sandbox-exec", path);
    return {
      platform: exec ? "macos-seatbelt" : "none",
      enclose: exec,
      socat: null,
      missing: exec ? null : "sandbox-exec (part of macOS) was not found on PATH",
    };
  }
  if (platform !== "linux") return { platform: "none", enclose: null, socat: null, missing: `no sandbox is available on ${platform}` };
  const [bwrap, socat] = await Promise.all([whichExecutable("bwrap", path), whichExecutable("socat", path)]);
  if (!bwrap) return { platform: "none", enclose: null, socat, missing: `bwrap was not found on PATH: ${LINUX_HINT}` };
  const tried = await run(bwrap, ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]);
  if (!tried.ok) {
    return {
      platform: "none",
      enclose: null,
      socat,
      missing: `bwrap cannot create its namespaces here (${tried.stderr || "it failed"}): switch unprivileged user namespaces on (sudo sysctl -w kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04 an AppArmor profile for bwrap), or run the sidecar where they are allowed`,
    };
  }
  return {
    platform: "linux-bwrap",
    enclose: bwrap,
    socat,
    missing: socat ? null : `socat was not found on PATH (the allowlist's proxy needs it): ${LINUX_HINT}`,
  };
}

/** What the machine says of its sandbox in its hello, in `GET /v1/machines` and in `status`. */
export function machineSandbox(tools: SandboxTools, limits: OwnerLimits): MachineSandbox {
  return {
    platform: tools.platform,
    enforceable: tools.enclose ? ["read-only", "workspace", "full"] : ["full"],
    missing: tools.missing,
    floor: limits.floor,
    deny: limits.deny,
    roots: limits.roots,
  };
}

/** Does this spec need the operating system's help (anything but full access and an open network)? */
export function needsEnclosure(spec: SandboxSpec): boolean {
  return spec.profile !== "full" || spec.network.mode !== "open" || spec.denyRead.length > 0;
}

/** Refuse a spec the machine cannot enforce, saying what to install: never a quiet fall back to `full`. */
export function assertEnforceable(tools: SandboxTools, spec: SandboxSpec): void {
  if (!needsEnclosure(spec)) return;
  const what = `the sandbox asked for (${spec.profile}, network ${spec.network.mode})`;
  if (!tools.enclose) {
    throw new ProblemError("sandbox_unavailable", `this machine cannot enforce ${what}: ${tools.missing ?? "no sandbox tool"}; no agent was started`, {
      sandbox: spec,
      missing: tools.missing,
    });
  }
  if (tools.platform === "linux-bwrap" && spec.network.mode === "allowlist" && !tools.socat) {
    throw new ProblemError("sandbox_unavailable", `this machine cannot enforce ${what}: ${tools.missing}; no agent was started`, {
      sandbox: spec,
      missing: tools.missing,
    });
  }
}
