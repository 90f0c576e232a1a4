/**
 * What the machine's owner sets on the sidecar and nothing hosted can loosen (docs/architecture.md,
 * "Sandboxes"): a floor for every agent's sandbox (`--sandbox`, `--allow-network`), capabilities of the
 * hosted side switched off (`--deny`), and the folders sessions and routes may name (`--roots`). Read
 * from flags, then the environment, then `<config dir>/sandbox.json`; the first that says something wins.
 */
import { readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { DeniedPath, NetworkHost, NO_SANDBOX, SandboxProfile, type SandboxNetwork, type SandboxSpec } from "@agent-runtime/protocol/sandbox";
import { errnoCode } from "../log";

/** Capabilities of the hosted side an owner can switch off. */
export const DENIABLE = ["processes", "terminal", "files", "agents-install"] as const;
export type Deniable = (typeof DENIABLE)[number];

export interface OwnerLimits {
  floor: SandboxSpec;
  deny: Deniable[];
  /** Absolute folders; empty: any folder. */
  roots: string[];
}

export const NO_OWNER_LIMITS: OwnerLimits = { floor: NO_SANDBOX, deny: [], roots: [] };

/** `<config dir>/sandbox.json`: the same settings as the flags, for a service that should not repeat them. */
export const OwnerLimitsFile = z
  .object({
    sandbox: SandboxProfile.optional(),
    allowNetwork: z.union([z.literal("none"), z.array(NetworkHost).max(256)]).optional(),
    denyRead: z.array(DeniedPath).max(256).optional(),
    deny: z.array(z.enum(DENIABLE)).optional(),
    roots: z.array(z.string().min(1).max(4096)).max(64).optional(),
  })
  .strict();
export type OwnerLimitsFile = z.infer<typeof OwnerLimitsFile>;

/** What the flags and the environment said, as written (undefined: not said). */
export interface OwnerLimitsInput {
  sandbox?: string | undefined;
  allowNetwork?: string | undefined;
  deny?: string | undefined;
  roots?: string | undefined;
}

export class OwnerLimitsError extends Error {}

/** The floor's network: `none`, a comma separated allowlist, or (unset) no floor on the network. */
export function parseNetwork(value: string | readonly string[] | undefined, source: string): SandboxNetwork {
  if (value === undefined) return { mode: "open", allow: [] };
  if (value === "none" || (typeof value === "string" && value.trim() === "")) return { mode: "none", allow: [] };
  const hosts = (typeof value === "string" ? value.split(",") : [...value]).map((h) => h.trim()).filter(Boolean);
  for (const host of hosts) {
    const parsed = NetworkHost.safeParse(host);
    if (!parsed.success) throw new OwnerLimitsError(`${source}: '${host}' is not a host, *.domain or IP address (each optionally with :port)`);
  }
  return { mode: "allowlist", allow: hosts };
}

function parseProfile(value: string | undefined, source: string): SandboxSpec["profile"] {
  if (value === undefined) return "full";
  const parsed = SandboxProfile.safeParse(value);
  if (!parsed.success) throw new OwnerLimitsError(`${source}: '${value}' is not a profile (read-only, workspace or full)`);
  return parsed.data;
}

function parseDeny(value: string | readonly string[] | undefined, source: string): Deniable[] {
  if (value === undefined) return [];
  const names = (typeof value === "string" ? value.split(",") : [...value]).map((n) => n.trim()).filter(Boolean);
  const out: Deniable[] = [];
  for (const name of names) {
    const deniable = DENIABLE.find((d) => d === name);
    if (!deniable) throw new OwnerLimitsError(`${source}: '${name}' is not one of ${DENIABLE.join(", ")}`);
    if (!out.includes(deniable)) out.push(deniable);
  }
  return out;
}

/** Folders as absolute paths (`~/code` is under the home folder); a relative one is refused, being ambiguous. */
function parseRoots(value: string | readonly string[] | undefined, home: string, source: string): string[] {
  if (value === undefined) return [];
  const names = (typeof value === "string" ? value.split(",") : [...value]).map((n) => n.trim()).filter(Boolean);
  return names.map((name) => {
    if (name === "~") return home;
    if (name.startsWith("~/")) return resolve(join(home, name.slice(2)));
    if (!isAbsolute(name)) throw new OwnerLimitsError(`${source}: '${name}' is neither absolute nor under ~/`);
    return resolve(name);
  });
}

/** The owner's limits: flags first, then the environment (the caller merged both into `input`), then the file. */
export function ownerLimits(input: OwnerLimitsInput, file: OwnerLimitsFile | null, home: string, fileName = "sandbox.json"): OwnerLimits {
  const from = (flag: string, said: unknown) => (said !== undefined ? flag : fileName);
  const network = input.allowNetwork ?? file?.allowNetwork;
  return {
    floor: {
      profile: parseProfile(input.sandbox ?? file?.sandbox, from("--sandbox", input.sandbox)),
      network: parseNetwork(network, from("--allow-network", input.allowNetwork)),
      denyRead: [...(file?.denyRead ?? [])],
    },
    deny: parseDeny(input.deny ?? file?.deny, from("--deny", input.deny)),
    roots: parseRoots(input.roots ?? file?.roots, home, from("--roots", input.roots)),
  };
}

/** `<config dir>/sandbox.json`, parsed; null when there is none. */
export async function readOwnerLimitsFile(path: string): Promise<OwnerLimitsFile | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return null;
    throw new OwnerLimitsError(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new OwnerLimitsError(`${path} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = OwnerLimitsFile.safeParse(value);
  if (!parsed.success) throw new OwnerLimitsError(`${path}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Is `path` one of the roots or inside one (no roots: every path is)? */
export function underRoots(roots: readonly string[], path: string): boolean {
  if (roots.length === 0) return true;
  const target = resolve(path);
  return roots.some((root) => target === root || target.startsWith(root.endsWith("/") ? root : `${root}/`));
}
