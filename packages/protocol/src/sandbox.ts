/**
 * Sandboxes (docs/architecture.md, "Sandboxes"): what the operating system lets an agent process and
 * everything it starts do on the machine. The team's policy asks for a spec per agent, machine and origin
 * of the work; the machine's owner sets a floor on the sidecar; the sidecar enforces the stricter of the
 * two. Nothing from the hosted side can make the result looser than the floor.
 */
import { z } from "zod";
import { CONTROL_CHARS } from "./values";
import { resource, strictResource } from "./resource";

/**
 * From the strictest to the loosest: `read-only` reads (never the secrets) and writes a private temp
 * folder; `workspace` also writes the session's folder (its `.git/hooks` and `.git/config` stay
 * read-only); `full` is the sidecar user's own rights, chosen explicitly.
 */
export const SANDBOX_PROFILES = ["read-only", "workspace", "full"] as const;
export const SandboxProfile = z.enum(SANDBOX_PROFILES).meta({ id: "SandboxProfile" });
export type SandboxProfile = z.infer<typeof SandboxProfile>;

/** From the strictest to the loosest: no network at all, only listed hosts (through the sandbox's proxy), anything. */
export const NETWORK_MODES = ["none", "allowlist", "open"] as const;
export const NetworkMode = z.enum(NETWORK_MODES);
export type NetworkMode = z.infer<typeof NetworkMode>;

/** Where the work came from: a person's session, or unattended work. */
export const WORK_ORIGINS = ["session", "task", "schedule", "trigger"] as const;
export const WorkOrigin = z.enum(WORK_ORIGINS).meta({ id: "WorkOrigin" });
export type WorkOrigin = z.infer<typeof WorkOrigin>;

/**
 * An allowlist entry: a host name (`github.com`), a wildcard over subdomains (`*.npmjs.org`), an IPv4
 * address, or any of those with a port (`127.0.0.1:18555`, `[::1]:8080`). Loopback is reached only on
 * the ports listed.
 */
export const NetworkHost = z
  .string()
  .min(1)
  .max(260)
  .regex(
    /^(?:(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/,
    "a host name, *.domain, an IP address, each optionally with :port",
  )
  .refine((v) => {
    const port = /:(\d{1,5})$/.exec(v.startsWith("[") ? v.slice(v.indexOf("]")) : v)?.[1];
    return port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
  }, "a port is 1 to 65535")
  .meta({ id: "NetworkHost" });

export const SandboxNetwork = strictResource("SandboxNetwork", {
  mode: NetworkMode,
  allow: z.array(NetworkHost).max(256).default([]).describe("with `allowlist`: the hosts (and loopback ports) a process may reach"),
});
export type SandboxNetwork = z.infer<typeof SandboxNetwork>;

/** A path the team or the owner adds to what is never readable: absolute, or under the home folder (`~/…`). */
export const DeniedPath = z
  .string()
  .min(2)
  .max(1024)
  .refine((v) => !CONTROL_CHARS.test(v), "a path must not contain control characters")
  .refine((v) => v.startsWith("/") || v.startsWith("~/"), "a path is absolute or starts with ~/");

export const SandboxSpec = strictResource("SandboxSpec", {
  profile: SandboxProfile,
  network: SandboxNetwork,
  denyRead: z.array(DeniedPath).max(256).default([]).describe("never readable, beside the built-in secrets (~/.ssh, ~/.aws, …)"),
});
export type SandboxSpec = z.infer<typeof SandboxSpec>;

/** No sandbox: what a machine does when neither its owner nor the team asked for one. */
export const NO_SANDBOX: SandboxSpec = { profile: "full", network: { mode: "open", allow: [] }, denyRead: [] };

function rank<T extends string>(order: readonly T[], v: T): number {
  return order.indexOf(v);
}

/** The stricter of two networks: the lower mode; two allowlists meet in what both list. */
export function stricterNetwork(a: SandboxNetwork, b: SandboxNetwork): SandboxNetwork {
  const mode = rank(NETWORK_MODES, a.mode) <= rank(NETWORK_MODES, b.mode) ? a.mode : b.mode;
  if (mode !== "allowlist") return { mode, allow: [] };
  if (a.mode === "allowlist" && b.mode === "allowlist") {
    const inB = new Set(b.allow.map((h) => h.toLowerCase()));
    return { mode, allow: a.allow.filter((h) => inB.has(h.toLowerCase())) };
  }
  return { mode, allow: a.mode === "allowlist" ? [...a.allow] : [...b.allow] };
}

/**
 * The stricter of two specs, field by field: the lower profile, the stricter network, every denied path
 * of both. Used to apply the owner's floor to what the team asked (the floor always wins where stricter).
 */
export function stricterSandbox(a: SandboxSpec, b: SandboxSpec): SandboxSpec {
  const profile = rank(SANDBOX_PROFILES, a.profile) <= rank(SANDBOX_PROFILES, b.profile) ? a.profile : b.profile;
  return { profile, network: stricterNetwork(a.network, b.network), denyRead: [...new Set([...a.denyRead, ...b.denyRead])] };
}

/** What a machine says of its sandbox in its hello, shown by `GET /v1/machines` and the sidecar's status. */
export const MachineSandbox = resource("MachineSandbox", {
  platform: z.enum(["linux-bwrap", "macos-seatbelt", "none"]).describe("how this machine encloses agents"),
  enforceable: z.array(SandboxProfile).describe("the profiles it can enforce now (`full` always)"),
  missing: z.string().nullable().describe("when a profile cannot be enforced: what to install or switch on"),
  floor: SandboxSpec.describe("the owner's floor: nothing from the team loosens it"),
  deny: z.array(z.string()).describe("capabilities the owner switched off (`--deny`): processes, terminal, files, agents-install"),
  roots: z.array(z.string()).describe("folders sessions, worktrees, file and git routes may name (`--roots`); empty: any"),
});
export type MachineSandbox = z.infer<typeof MachineSandbox>;

/**
 * What the sidecar writes into an agent's ACP stream when its sandbox refused something (an ACP extension
 * notification: clients that do not know it ignore it). The machine's object turns it into a `sandbox`
 * entry of the session's transcript, an audit line and a `sandbox.blocked` notification.
 */
export const SANDBOX_BLOCKED_METHOD = "_agent_runtime/sandbox_blocked";

export const SandboxBlocked = resource("SandboxBlocked", {
  /** The session the agent was in; absent when the agent had none yet. */
  sessionId: z.string().max(1024).optional(),
  kind: z.enum(["network", "file"]),
  /** What was refused: `CONNECT host:port`, `GET host:port`, or a path. */
  target: z.string().max(2048),
  reason: z.string().max(2048),
  atMs: z.number().int(),
});
export type SandboxBlocked = z.infer<typeof SandboxBlocked>;
