/**
 * Applies the team's MCP document on this machine: each installed agent's own configuration file gets the
 * team's servers (sidecar/config/mcp-formats.ts spells them per agent), so the agent finds them however it is
 * started, through the runtime or by the developer in a terminal.
 *
 * What the runtime wrote is recorded in a manifest; a later document replaces exactly that, never a
 * server the developer configured. Each file is rewritten in one rename, keeping its mode (these files
 * may hold MCP servers' environment). One agent's unreadable file fails alone. The same document applied
 * again to the same agents writes nothing.
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { McpApplyResult, type McpApplyArgs } from "@agent-runtime/protocol/ops/config";
import { writeFileAtomic } from "../atomic-file";
import { AGENTS } from "../agents/definitions";
import { errnoCode, errorText, logger } from "../log";
import { type McpFormat, updateMcpFile } from "./mcp-formats";
import { appliedRecord, ManifestFile } from "./manifest-file";
import { ManifestApplier } from "./manifest-applier";

const log = logger("mcp");

export interface McpTarget {
  agent: string;
  /** Relative to HOME. */
  file: string;
  format: McpFormat;
}

const Manifest = z.object({
  /** file (relative to HOME) → the servers the runtime wrote there */
  written: z.record(z.string(), z.array(z.string())),
  applied: appliedRecord(McpApplyResult),
});
type Manifest = z.infer<typeof Manifest>;

async function readText(path: string): Promise<{ text: string | null; mode: number }> {
  try {
    const [text, info] = await Promise.all([readFile(path, "utf8"), stat(path)]);
    return { text, mode: info.mode & 0o777 };
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return { text: null, mode: 0o600 };
    throw err;
  }
}

export class McpApplier extends ManifestApplier<McpApplyArgs, McpApplyResult, Manifest, McpTarget> {
  constructor(
    dataDir: string,
    private readonly home: string,
    /** The configuration files to fill: those of the agents installed here. */
    targets: () => Promise<McpTarget[]>,
  ) {
    super(new ManifestFile(join(dataDir, "mcp-manifest.json"), Manifest, () => ({ written: {}, applied: undefined }), 0o600), targets);
  }

  protected async applyChanged({ version, config }: McpApplyArgs, targets: McpTarget[], manifest: Manifest): Promise<McpApplyResult> {
    const perAgent: Record<string, string[]> = {};
    const errors: McpApplyResult["errors"] = [];
    for (const target of targets) {
      try {
        const { written, conflicts } = await this.writeFile(target.file, target.format, config.servers, manifest);
        perAgent[target.agent] = written;
        for (const name of conflicts) {
          errors.push({ agent: target.agent, error: `${target.file} has a server named '${name}' that the runtime did not write: left as it is` });
        }
      } catch (err) {
        errors.push({ agent: target.agent, error: `${target.file}: ${errorText(err)}` });
      }
    }
    // Files of agents no longer here: what the runtime wrote there is removed.
    for (const file of Object.keys(manifest.written)) {
      if (targets.some((t) => t.file === file)) continue;
      const format = Object.values(AGENTS).find((a) => a.mcpConfig?.file === file)?.mcpConfig?.format;
      if (format) await this.writeFile(file, format, {}, manifest).catch((err: unknown) => log.warn(`${file}: ${errorText(err)}`));
      else delete manifest.written[file];
    }
    const servers = [...new Set(Object.values(perAgent).flat())].sort();
    return { version, appliedAtMs: Date.now(), servers, perAgent, errors };
  }

  protected applied({ version, servers, errors }: McpApplyResult, targets: McpTarget[]): void {
    log.info(
      `applied MCP document ${version}: ${servers.length} server(s) for ${targets.length} agent(s)${errors.length ? `, ${errors.length} error(s)` : ""}`,
    );
  }

  private async writeFile(file: string, format: McpFormat, servers: McpApplyArgs["config"]["servers"], manifest: Manifest) {
    const path = join(this.home, file);
    const { text, mode } = await readText(path);
    const previous = manifest.written[file] ?? [];
    if (text === null && Object.keys(servers).length === 0) {
      delete manifest.written[file];
      return { written: [], conflicts: [] };
    }
    const update = updateMcpFile(format, text, previous, servers);
    if (update.text === text) {
      manifest.written[file] = update.written; // saved with the apply's result
      return update;
    }
    // Claimed before they are on disk, so a crash in between never leaves a server of ours unrecorded (it
    // would then look like the developer's own, and stay for ever); settled to exactly what was written after.
    manifest.written[file] = [...new Set([...previous, ...update.written])];
    await this.manifest.write(manifest);
    await writeFileAtomic(path, update.text, mode);
    manifest.written[file] = update.written;
    await this.manifest.write(manifest);
    return update;
  }
}

/** The configuration files of the agents installed here (the built-in mock agent always is). */
export async function installedMcpTargets(isInstalled: (agent: keyof typeof AGENTS) => Promise<boolean>): Promise<McpTarget[]> {
  const targets: McpTarget[] = [];
  for (const def of Object.values(AGENTS)) {
    if (def.mcpConfig && (def.launch.from === "builtin" || (await isInstalled(def.id)))) targets.push({ agent: def.id, ...def.mcpConfig });
  }
  return targets;
}
