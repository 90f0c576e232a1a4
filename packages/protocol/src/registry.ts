/**
 * The ACP agent registry (docs/architecture.md, "Agents"): the catalog every ACP client reads, one JSON
 * document of agents with `npx`, `uvx` and per-platform `binary` distributions. The worker fetches and
 * caches it; the sidecar installs an entry it is handed. One schema for both, so what crosses the tunnel
 * is parsed, never cast.
 */
import { z } from "zod";
import { resource } from "./resource";

/** What the registry spells an agent's id: lowercase, digits and hyphens (its directory name). */
export const RegistryAgentId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, "a registry agent id (lowercase letters, digits, hyphens)");

const Env = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(4096));
const Args = z.array(z.string().max(4096)).max(64);

/** npm's package names (validate-npm-package-name): lowercase, URL-safe, optionally scoped, at most 214 characters. */
const NPM_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;
/** A version, range or dist-tag as one word (no spaces, never starting like an option). */
const NPM_VERSION = /^[A-Za-z0-9^~<>=*.+_|][A-Za-z0-9^~<>=*.+_|-]*$/;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * What npm may be asked to install for a registry entry: `name` or `name@version` by npm's rules, or a
 * tarball's https URL (http only from this machine itself, for a local mirror). Never a path, a git URL, a
 * `file:` spec or anything npm would read as an option (`--prefix=…`).
 */
export function isNpmPackageSpec(spec: string): boolean {
  if (/^https?:\/\//i.test(spec)) {
    if (!URL.canParse(spec)) return false;
    const url = new URL(spec);
    return url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname));
  }
  const at = spec.indexOf("@", 1);
  const name = at === -1 ? spec : spec.slice(0, at);
  const version = at === -1 ? null : spec.slice(at + 1);
  return name.length <= 214 && NPM_NAME.test(name) && (version === null || NPM_VERSION.test(version));
}

/** A PyPI requirement as uvx takes it: a name (PEP 508), optional extras, and a pinned or ranged version (`==1.0`, `>=1,<2`, `@1.0`). */
const PYPI_REQUIREMENT =
  /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*\])?(?:(?:===|==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!_-]+(?:,(?:===|==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!_-]+)*|@[A-Za-z0-9.+!_-]+)?$/;

export function isPypiRequirement(spec: string): boolean {
  return PYPI_REQUIREMENT.test(spec);
}

/** A package run through a package runner: npm's (`npx`) or uv's (`uvx`). */
const packageDistribution = (spec: z.ZodType<string>) => z.object({ package: spec, args: Args.optional(), env: Env.optional() });

export const NpxDistribution = packageDistribution(
  z
    .string()
    .min(1)
    .max(512)
    .refine(isNpmPackageSpec, "an npm package (name or name@version, by npm's rules) or a tarball's https URL")
    .describe("an npm package spec: name@version, or a tarball's https URL"),
);
export const UvxDistribution = packageDistribution(
  z.string().min(1).max(512).refine(isPypiRequirement, "a PyPI requirement (name, optional [extras], version)").describe("a PyPI requirement: name==version"),
);
export type PackageDistribution = z.infer<typeof NpxDistribution>;

/** One platform's build: an archive (or a raw binary) and the command inside it. */
export const BinaryTarget = z.object({
  archive: z.string().url().max(2048),
  cmd: z.string().min(1).max(512).describe("the program, relative to the unpacked archive (e.g. ./agent)"),
  args: Args.optional(),
  env: Env.optional(),
  sha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/)
    .optional()
    .describe("the archive's SHA-256, checked before anything is unpacked"),
});
export type BinaryTarget = z.infer<typeof BinaryTarget>;

/** The platforms the registry names, and what a machine reports for each (`process.platform-process.arch`). */
export const REGISTRY_PLATFORMS: Record<string, string> = {
  "linux-x64": "linux-x86_64",
  "linux-arm64": "linux-aarch64",
  "darwin-x64": "darwin-x86_64",
  "darwin-arm64": "darwin-aarch64",
  "win32-x64": "windows-x86_64",
  "win32-arm64": "windows-aarch64",
};

export const RegistryAgent = resource("RegistryAgent", {
  id: RegistryAgentId,
  name: z.string().min(1).max(200),
  version: z.string().min(1).max(100),
  description: z.string().max(2000).default(""),
  repository: z.string().max(2048).optional(),
  distribution: z
    .object({
      npx: NpxDistribution.optional(),
      uvx: UvxDistribution.optional(),
      binary: z.record(z.string(), BinaryTarget).optional(),
    })
    .refine((d) => d.npx || d.uvx || d.binary, "at least one distribution"),
});
export type RegistryAgent = z.infer<typeof RegistryAgent>;

export type DistributionKind = "npx" | "uvx" | "binary";

export const distributionKinds = (entry: RegistryAgent): DistributionKind[] =>
  (["npx", "binary", "uvx"] as const).filter((kind) => entry.distribution[kind] !== undefined);

/**
 * The registry ids of the agents this runtime knew before it read the registry: their old names keep
 * working (`claude` is `claude-acp`), with what the runtime knows about them (credentials, skills, MCP).
 */
export const BUILTIN_REGISTRY_IDS: Record<string, string> = {
  claude: "claude-acp",
  codex: "codex-acp",
  gemini: "gemini",
  opencode: "opencode",
  pi: "pi-acp",
  amp: "amp-acp",
};

/** An npm package spec as the registry writes it (`@scope/name@1.2.3`, `name`): its name and version (`latest` when none). */
export function splitPackageSpec(spec: string): { name: string; version: string } {
  const at = spec.lastIndexOf("@");
  return at <= 0 ? { name: spec, version: "latest" } : { name: spec.slice(0, at), version: spec.slice(at + 1) };
}

/** A built-in agent's registry id (`claude` is `claude-acp`), or the id itself. */
export function registryIdOf(agent: string): string {
  return BUILTIN_REGISTRY_IDS[agent] ?? agent;
}

/** A built-in agent's name for a registry id, or the id itself. */
export function builtinName(id: string): string {
  for (const [name, registryId] of Object.entries(BUILTIN_REGISTRY_IDS)) if (registryId === id) return name;
  return id;
}

/**
 * How this machine would install an entry, or why it cannot: a binary for its platform first (no runtime
 * needed), then npx, then uvx (which needs `uv` on the machine, checked when installing).
 */
export function installPlan(entry: RegistryAgent, machinePlatform: string | null): { kind: DistributionKind } | { kind: null; reason: string } {
  const platform = machinePlatform ? REGISTRY_PLATFORMS[machinePlatform.split(" ")[0]!] : undefined;
  if (platform && entry.distribution.binary?.[platform]) return { kind: "binary" };
  if (entry.distribution.npx) return { kind: "npx" };
  if (entry.distribution.uvx) return { kind: "uvx" };
  const offered = Object.keys(entry.distribution.binary ?? {}).join(", ");
  return { kind: null, reason: `${entry.id} has builds for ${offered || "no platform"}, not for this machine (${platform ?? machinePlatform ?? "unknown"})` };
}

/** The registry document: entries that do not parse are left out one by one, not the whole catalog. */
export function parseRegistry(body: unknown): { version: string | null; agents: RegistryAgent[]; skipped: string[] } {
  const doc = z.object({ version: z.string().optional(), agents: z.array(z.unknown()) }).safeParse(body);
  if (!doc.success) throw new Error("not an ACP registry document (no agents list)");
  const agents: RegistryAgent[] = [];
  const skipped: string[] = [];
  for (const raw of doc.data.agents) {
    const entry = RegistryAgent.safeParse(raw);
    if (entry.success) agents.push(entry.data);
    else skipped.push(typeof raw === "object" && raw && "id" in raw ? String((raw as { id: unknown }).id) : "(no id)");
  }
  return { version: doc.data.version ?? null, agents, skipped };
}
