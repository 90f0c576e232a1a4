/**
 * Agents from the ACP registry that the runtime has no built-in definition for, installed by their
 * distribution into the data folder (docs/architecture.md, "Agents"):
 *
 *   <dataDir>/agents/<id>/<version>-<kind>/...   one folder per version and distribution
 *   <dataDir>/agents/<id>/registry.json           what runs: command, args, env (RegistryInstalled)
 *
 * - npx: the package and its dependencies installed by npm into that folder (never npx's cache); the
 *   command is the package's bin, run by a Node that satisfies its `engines.node`.
 * - binary: this platform's archive downloaded, its SHA-256 checked when the entry has one, unpacked with
 *   the same entry checks as a file batch; the command is `cmd` inside it.
 * - uvx: only with `uv` on the machine's PATH (its tool and cache folders in the data folder).
 *
 * Each install is staged and renamed into place, then recorded: a failed one leaves nothing, the previous
 * version keeps working, and installing what is installed does nothing.
 */
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { PackageJson, readJsonFile } from "../json-file";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { z } from "zod";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { type DistributionKind, installPlan, REGISTRY_PLATFORMS, type RegistryAgent } from "@agent-runtime/protocol/registry";
import type { InstallResult } from "@agent-runtime/protocol/agents";
import { writeFileAtomic } from "../atomic-file";
import { errorText, logger } from "../log";
import { type ProcessManager, whichExecutable } from "../processes/processes";
import { archiveKind, makeExecutable, unpackArchive } from "./archive";
import { ensurePackageBoundary, exists, runTool } from "./install-tools";
import { nodeRunnerFor, relocated } from "./node-runner";

const log = logger("install");

/** An agent's archive is its program and what it needs; past this it is refused rather than filling the disk. */
const MAX_ARCHIVE_BYTES = 1024 * 1024 * 1024;

/** What runs a registry agent, as recorded at install time (read back by the launcher and the catalog). */
export const RegistryInstalled = z.object({
  id: z.string(),
  name: z.string(),
  version: z.string(),
  kind: z.enum(["npx", "binary", "uvx"]),
  command: z.string(),
  args: z.array(z.string()),
  env: z.record(z.string(), z.string()),
  /** The folder of this version (removed when a later one replaces the one before it). */
  root: z.string(),
  /** A Node script: its real file, run by `node` or else the sidecar's own Node (sidecar/agents/node-runner.ts). */
  script: z.string().optional(),
  node: z.string().optional(),
});
export type RegistryInstalled = z.infer<typeof RegistryInstalled>;

export interface RegistryInstallerOptions {
  dataDir: string;
  processes: ProcessManager;
  npmCommand?: string;
  /** A Node for agents whose package needs a newer one than the sidecar's (--agent-node). */
  agentNode?: string | null;
  /** The machine's platform as Node names it (a parameter so that tests can ask for another). */
  platform?: string;
  /** Where `uv`/`uvx` are looked for. */
  path?: string;
}

/** This machine's platform as Node names it (`linux-x64`): what the registry's builds are chosen by. */
export const MACHINE_PLATFORM = `${process.platform}-${process.arch}`;

const recordFile = (dataDir: string, id: string) => join(dataDir, "agents", id, "registry.json");

/** What is installed of a registry agent, or null; a record whose program is gone counts as nothing. */
export async function readRegistryInstalled(dataDir: string, id: string): Promise<RegistryInstalled | null> {
  try {
    const record = await readJsonFile(recordFile(dataDir, id), RegistryInstalled);
    return (await exists(record.command)) ? record : null;
  } catch {
    return null;
  }
}

/** Every registry agent installed in the data folder. */
export async function listRegistryInstalled(dataDir: string): Promise<RegistryInstalled[]> {
  const ids = await readdir(join(dataDir, "agents")).catch((): string[] => []);
  const records = await Promise.all(ids.map((id) => readRegistryInstalled(dataDir, id)));
  return records.filter((r): r is RegistryInstalled => r !== null);
}

export class RegistryInstaller {
  constructor(private readonly options: RegistryInstallerOptions) {}

  private get platform(): string {
    return this.options.platform ?? MACHINE_PLATFORM;
  }

  async install(entry: RegistryAgent, reinstall: boolean): Promise<InstallResult> {
    const kind = this.kindFor(entry);
    const current = await readRegistryInstalled(this.options.dataDir, entry.id);
    if (current && current.version === entry.version && current.kind === kind && !reinstall) {
      return { already_installed: true, artifacts: [{ kind: "agent_process", path: current.command, source: artifactSource(kind), version: current.version }] };
    }
    await ensurePackageBoundary(this.options.dataDir);
    const agentDir = join(this.options.dataDir, "agents", entry.id);
    const target = join(agentDir, `${entry.version.replace(/[^0-9A-Za-z._-]/g, "_")}-${kind}`);
    const staging = `${target}.staging-${process.pid}-${Date.now()}`;
    await mkdir(staging, { recursive: true });
    log.info(`${entry.id}: installing ${entry.version} (${kind}) ...`);
    let installed: Omit<RegistryInstalled, "root">;
    try {
      installed = await this.installInto(entry, kind, staging, target);
      await rm(target, { recursive: true, force: true });
      await rename(staging, target);
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
    await writeFileAtomic(recordFile(this.options.dataDir, entry.id), JSON.stringify({ ...installed, root: target }, null, 2));
    // The version before stays (a session may still run it) until the next one replaces it.
    await this.pruneOlder(agentDir, [target, current?.root]);
    log.info(`${entry.id}: installed ${entry.version}`);
    return { already_installed: false, artifacts: [{ kind: "agent_process", path: installed.command, source: artifactSource(kind), version: entry.version }] };
  }

  /** The distribution this machine uses: its platform's binary first, then npx, then uvx. */
  private kindFor(entry: RegistryAgent): DistributionKind {
    const plan = installPlan(entry, this.platform);
    if (plan.kind) return plan.kind;
    throw new ProblemError("unsupported_agent", plan.reason, { platforms: Object.keys(entry.distribution.binary ?? {}) });
  }

  private async installInto(entry: RegistryAgent, kind: DistributionKind, staging: string, target: string): Promise<Omit<RegistryInstalled, "root">> {
    const base = { id: entry.id, name: entry.name, version: entry.version, kind };
    if (kind === "binary") {
      const build = entry.distribution.binary![REGISTRY_PLATFORMS[this.platform]!]!;
      const download = join(staging, ".download");
      const digest = await fetchTo(build.archive, download);
      if (build.sha256 && digest !== build.sha256.toLowerCase()) {
        throw new ProblemError(
          "package_unavailable",
          `the archive of ${entry.id} ${entry.version} does not match its checksum (sha256 ${digest}, the registry says ${build.sha256})`,
          {
            archive: build.archive,
          },
        );
      }
      const root = join(staging, "root");
      await unpackArchive(download, build.archive, root, build.cmd);
      await rm(download, { force: true });
      await rm(`${download}.tar`, { force: true });
      const program = resolve(root, build.cmd);
      if (!program.startsWith(`${root}/`) || !(await exists(program))) {
        throw new ProblemError("package_unavailable", `the archive of ${entry.id} ${entry.version} has no '${build.cmd}'`, { archive: build.archive });
      }
      if (archiveKind(build.archive) !== "tar") await makeExecutable(program);
      return { ...base, command: join(target, "root", program.slice(root.length + 1)), args: build.args ?? [], env: build.env ?? {} };
    }
    if (kind === "uvx") {
      const dist = entry.distribution.uvx!;
      const uvx = await whichExecutable("uvx", this.options.path ?? process.env.PATH ?? "");
      if (!uvx) {
        throw new ProblemError(
          "package_unavailable",
          `${entry.id} is distributed through uvx, and uv is not on this machine's PATH: install uv (https://docs.astral.sh/uv/) where the sidecar runs, then install again`,
          { needs: "uv" },
        );
      }
      // uv keeps its tools and cache under the agent's folder, not in the person's.
      const env = { UV_TOOL_DIR: join(target, "tools"), UV_CACHE_DIR: join(target, "cache"), ...dist.env };
      await runTool(this.options.processes, {
        command: uvx,
        args: [`--from=${dist.package}`, "--help"],
        cwd: staging,
        label: `install:${entry.id}`,
        what: `uvx could not fetch ${dist.package}`,
        env: { UV_TOOL_DIR: join(staging, "tools"), UV_CACHE_DIR: join(staging, "cache") },
      }).catch(() => undefined); // warms the cache; a tool without --help still installs
      return { ...base, command: uvx, args: [dist.package, ...(dist.args ?? [])], env };
    }
    return this.installNpx(entry, staging, target);
  }

  private async installNpx(entry: RegistryAgent, staging: string, target: string): Promise<Omit<RegistryInstalled, "root">> {
    const dist = entry.distribution.npx!;
    await writeFileAtomic(join(staging, "package.json"), JSON.stringify({ name: `agent-runtime-${entry.id}`, private: true }));
    await runTool(this.options.processes, {
      command: this.options.npmCommand ?? process.env.AGENT_RUNTIME_NPM ?? "npm",
      // After `--`, npm reads the spec as a package whatever it looks like (it was checked against npm's rules too).
      args: ["install", "--no-audit", "--no-fund", "--save", "--loglevel=error", "--", dist.package],
      cwd: staging,
      label: `install:${entry.id}`,
      what: `npm install ${dist.package} failed for agent '${entry.id}'`,
    });
    // The spec may be a name@version or a tarball address: what npm saved names the package.
    const saved = await readJsonFile(join(staging, "package.json"), PackageJson);
    const name = Object.keys(saved.dependencies ?? {})[0];
    if (!name) throw new ProblemError("install_failed", `npm installed nothing for ${dist.package}`);
    const manifest = await readJsonFile(join(staging, "node_modules", name, "package.json"), PackageJson);
    const bins = typeof manifest.bin === "string" ? { [name.split("/").pop()!]: manifest.bin } : (manifest.bin ?? {});
    // As npx picks: the bin named like the package, else the only one.
    const binName = bins[name.split("/").pop()!] !== undefined ? name.split("/").pop()! : Object.keys(bins).length === 1 ? Object.keys(bins)[0]! : null;
    if (!binName)
      throw new ProblemError(
        "install_failed",
        `${name} has ${Object.keys(bins).length ? `several commands (${Object.keys(bins).join(", ")})` : "no command"} and the registry names none`,
      );
    const base = { id: entry.id, name: entry.name, version: entry.version, kind: "npx" as const, env: dist.env ?? {}, args: dist.args ?? [] };
    const runner = await nodeRunnerFor(join(staging, "node_modules", name), join(staging, "node_modules", ".bin", binName), {
      agentNode: this.options.agentNode ?? null,
      path: this.options.path,
    });
    const command = join(target, "node_modules", ".bin", binName);
    return { ...base, command, ...(await relocated(runner, staging, target)) };
  }

  private async pruneOlder(agentDir: string, keep: (string | undefined)[]): Promise<void> {
    const entries = await readdir(agentDir, { withFileTypes: true }).catch(() => []);
    await Promise.all(
      entries
        .filter((e) => e.isDirectory() && !e.name.includes(".staging-"))
        .map((e) => join(agentDir, e.name))
        .filter((path) => !keep.includes(path))
        .map((path) => rm(path, { recursive: true, force: true })),
    );
  }
}

/** An install's source as the API names it (npx installs come from npm). */
const artifactSource = (kind: DistributionKind) => (kind === "npx" ? "npm" : kind);

/** Downloads `url` into `file`, bounded, and returns its SHA-256 (hex). */
async function fetchTo(url: string, file: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { redirect: "follow" });
  } catch (err) {
    throw new ProblemError("package_unavailable", `the archive at ${url} could not be fetched: ${errorText(err)}`, { archive: url });
  }
  if (!res.ok || !res.body) throw new ProblemError("package_unavailable", `the archive at ${url} answered HTTP ${res.status}`, { archive: url });
  const hash = createHash("sha256");
  let bytes = 0;
  // fetch's stream and node:stream/web's are the same object typed twice (DOM and Node typings).
  const counted = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>).map((chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > MAX_ARCHIVE_BYTES) throw new ProblemError("package_unavailable", `the archive at ${url} is larger than ${MAX_ARCHIVE_BYTES} bytes`);
    hash.update(chunk);
    return chunk;
  });
  await pipeline(counted, createWriteStream(file));
  return hash.digest("hex");
}
