/**
 * Per-directory configuration on this machine (docs/architecture.md, "Team configuration"): named MCP
 * server and skills entries for one folder, kept where sandbox-agent keeps them
 * (`<directory>/.sandbox-agent/config/{mcp,skills}.json`), so the SDK's calls read back what they wrote.
 *
 * They take effect where agents work in that folder: MCP entries are added to every ACP session started
 * there (`mcpServersFor`), skills entries are installed in the folder's own skills folders
 * (`<directory>/.claude/skills/…`), like the team's skills in HOME.
 */
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";
import type { OpResult } from "@agent-runtime/protocol/ops";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { McpServerConfig } from "@agent-runtime/protocol/mcp";
import { SkillsConfig } from "@agent-runtime/protocol/skills";
import { writeFileAtomic } from "../atomic-file";
import { logger } from "../log";
import type { ProcessManager } from "../processes/processes";
import { SkillsApplier, type SkillsTarget } from "./skills";
import type { OpHandlers } from "../tunnel";

const log = logger("directory-config");

/** A named map of entries in one JSON file; an entry that does not parse (edited by hand) is skipped, and said. */
class EntryFile<T> {
  constructor(
    private readonly fileName: string,
    private readonly schema: z.ZodType<T>,
  ) {}

  path(directory: string): string {
    return join(directory, ".sandbox-agent", "config", this.fileName);
  }

  async read(directory: string): Promise<Record<string, T>> {
    const info = await stat(directory).catch(() => null);
    if (!info?.isDirectory()) throw new ProblemError("not_found", `no such folder on this machine: ${directory}`);
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(this.path(directory), "utf8"));
    } catch {
      return {};
    }
    const entries: Record<string, T> = {};
    for (const [name, value] of Object.entries(typeof raw === "object" && raw !== null ? raw : {})) {
      const parsed = this.schema.safeParse(value);
      if (parsed.success) entries[name] = parsed.data;
      else log.warn(`${this.path(directory)}: entry '${name}' is not valid and is ignored`);
    }
    return entries;
  }

  async get(directory: string, name: string): Promise<T> {
    const entry = (await this.read(directory))[name];
    if (entry === undefined) throw new ProblemError("not_found", `no entry '${name}' for ${directory}`);
    return entry;
  }

  async write(directory: string, entries: Record<string, T>): Promise<string> {
    const path = this.path(directory);
    await writeFileAtomic(path, `${JSON.stringify(entries, null, 2)}\n`, 0o600);
    return path;
  }
}

/** One MCP server as an ACP `session/new` names it (stdio, or http/sse with headers). */
export type AcpMcpServer =
  | { name: string; command: string; args: string[]; env: { name: string; value: string }[] }
  | { type: "http" | "sse"; name: string; url: string; headers: { name: string; value: string }[] };

function toAcp(name: string, server: McpServerConfig, env: NodeJS.ProcessEnv): AcpMcpServer {
  const pairs = (map: Record<string, string> | null | undefined) => Object.entries(map ?? {}).map(([k, value]) => ({ name: k, value }));
  if (server.type === "local") return { name, command: server.command, args: server.args ?? [], env: pairs(server.env) };
  const headers = pairs(server.headers);
  const bearer = server.bearerTokenEnvVar ? env[server.bearerTokenEnvVar] : undefined;
  if (bearer) headers.push({ name: "Authorization", value: `Bearer ${bearer}` });
  for (const [header, variable] of Object.entries(server.envHeaders ?? {})) {
    const value = env[variable];
    if (value !== undefined) headers.push({ name: header, value });
  }
  return { type: server.transport === "sse" ? "sse" : "http", name, url: server.url, headers };
}

export class DirectoryConfig {
  private readonly mcp = new EntryFile("mcp.json", McpServerConfig);
  private readonly skills = new EntryFile("skills.json", SkillsConfig);
  private readonly appliers = new Map<string, SkillsApplier>();

  constructor(
    private readonly dataDir: string,
    private readonly processes: ProcessManager,
    private readonly skillsTargets: () => Promise<SkillsTarget[]>,
    private readonly resolvePath: (path: string) => string,
  ) {}

  handlers(): Pick<OpHandlers, "mcp.entry.get" | "mcp.entry.put" | "mcp.entry.delete" | "skills.entry.get" | "skills.entry.put" | "skills.entry.delete"> {
    return {
      "mcp.entry.get": ({ directory, name }) => this.mcp.get(this.resolvePath(directory), name),
      "mcp.entry.put": async ({ directory, name, config }) => {
        const dir = this.resolvePath(directory);
        return { path: await this.mcp.write(dir, { ...(await this.mcp.read(dir)), [name]: config }) };
      },
      "mcp.entry.delete": async ({ directory, name }) => {
        const dir = this.resolvePath(directory);
        const { [name]: gone, ...rest } = await this.mcp.read(dir);
        if (gone !== undefined) await this.mcp.write(dir, rest);
        return { deleted: gone !== undefined };
      },
      "skills.entry.get": ({ directory, name }) => this.skills.get(this.resolvePath(directory), name),
      "skills.entry.put": async ({ directory, name, config }) => {
        const dir = this.resolvePath(directory);
        const entries = { ...(await this.skills.read(dir)), [name]: config };
        await this.skills.write(dir, entries);
        return this.applySkills(dir, entries);
      },
      "skills.entry.delete": async ({ directory, name }) => {
        const dir = this.resolvePath(directory);
        const { [name]: gone, ...rest } = await this.skills.read(dir);
        if (gone !== undefined) await this.skills.write(dir, rest);
        return { ...(await this.applySkills(dir, rest)), deleted: gone !== undefined };
      },
    };
  }

  /** The folder's MCP entries for an ACP session started in `cwd` (none when the folder has none). */
  async mcpServersFor(cwd: string): Promise<AcpMcpServer[]> {
    const entries = await this.mcp.read(cwd).catch(() => ({}));
    return Object.entries(entries)
      .filter(([, server]) => server.enabled !== false)
      .map(([name, server]) => toAcp(name, server, process.env));
  }

  /** Every skills entry of the folder, together, installed into the folder's agents' skills folders. */
  private applySkills(directory: string, entries: Record<string, SkillsConfig>): Promise<OpResult<"skills.entry.put">> {
    const key = createHash("sha256").update(directory).digest("hex").slice(0, 16);
    let applier = this.appliers.get(key);
    if (!applier) {
      applier = new SkillsApplier(join(this.dataDir, "directories", key), directory, this.processes, this.skillsTargets);
      this.appliers.set(key, applier);
    }
    const sources = Object.values(entries).flatMap((entry) => entry.sources);
    const version = createHash("sha256").update(JSON.stringify(sources)).digest("hex").slice(0, 12);
    return applier.apply({ version, config: { sources } });
  }
}
