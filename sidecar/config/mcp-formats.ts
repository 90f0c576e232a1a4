/**
 * The team's MCP servers in each agent's own configuration file (docs/architecture.md, "Team
 * configuration"). Pure text in, text out: the caller reads and writes the files.
 *
 * Only entries this runtime wrote before (`previous`) are replaced or removed; a server the developer
 * configured under the same name is left as it is and reported as a conflict. Everything else in the
 * file (other keys, other servers, comments in TOML) stays untouched.
 */
import type { McpServerConfig } from "@agent-runtime/protocol/mcp";
import { z } from "zod";

export type McpFormat = "claude" | "gemini" | "opencode" | "codex";

export interface McpFileUpdate {
  text: string;
  /** The servers now in the file on the runtime's behalf. */
  written: string[];
  /** Servers the file already has under the same name, not written by the runtime: left alone. */
  conflicts: string[];
}

type Json = Record<string, unknown>;
const JsonObject = z.record(z.string(), z.unknown());

/** An `Authorization` header naming an environment variable, in the `${VAR}` form the agents expand. */
function headersOf(server: Extract<McpServerConfig, { type: "remote" }>): Record<string, string> | undefined {
  const headers: Record<string, string> = { ...server.headers };
  if (server.bearerTokenEnvVar) headers.Authorization = `Bearer \${${server.bearerTokenEnvVar}}`;
  for (const [name, variable] of Object.entries(server.envHeaders ?? {})) headers[name] = `\${${variable}}`;
  return Object.keys(headers).length ? headers : undefined;
}

function compact(value: Json): Json {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));
}

/** One server as the agent's JSON configuration spells it. */
function jsonEntry(format: Exclude<McpFormat, "codex">, server: McpServerConfig): Json {
  if (server.type === "local") {
    if (format === "opencode") return compact({ type: "local", command: [server.command, ...(server.args ?? [])], environment: server.env ?? undefined });
    if (format === "gemini") return compact({ command: server.command, args: server.args, env: server.env, cwd: server.cwd, timeout: server.timeoutMs });
    return compact({ type: "stdio", command: server.command, args: server.args ?? [], env: server.env ?? {} });
  }
  const headers = headersOf(server);
  if (format === "opencode") return compact({ type: "remote", url: server.url, headers });
  if (format === "gemini") return compact({ [server.transport === "sse" ? "url" : "httpUrl"]: server.url, headers, timeout: server.timeoutMs });
  return compact({ type: server.transport === "sse" ? "sse" : "http", url: server.url, headers });
}

const JSON_KEY: Record<Exclude<McpFormat, "codex">, string> = { claude: "mcpServers", gemini: "mcpServers", opencode: "mcp" };

function updateJson(format: Exclude<McpFormat, "codex">, existing: string | null, previous: string[], servers: Record<string, McpServerConfig>): McpFileUpdate {
  const doc = JsonObject.safeParse(existing?.trim() ? JSON.parse(existing) : {});
  if (!doc.success) throw new Error("the file does not hold a JSON object");
  const root = doc.data;
  const key = JSON_KEY[format];
  const current = JsonObject.safeParse(root[key] ?? {});
  if (!current.success) throw new Error(`its "${key}" is not an object`);
  const section = { ...current.data };
  for (const name of previous) if (!(name in servers)) delete section[name];
  const written: string[] = [];
  const conflicts: string[] = [];
  for (const [name, server] of Object.entries(servers)) {
    if (name in section && !previous.includes(name)) conflicts.push(name);
    else {
      section[name] = jsonEntry(format, server);
      written.push(name);
    }
  }
  if (Object.keys(section).length > 0 || key in root) root[key] = section;
  return { text: `${JSON.stringify(root, null, 2)}\n`, written, conflicts };
}

export const CODEX_BLOCK_BEGIN = "# >>> agent-runtime: the team's MCP servers (managed: edits inside this block are replaced) >>>";
export const CODEX_BLOCK_END = "# <<< agent-runtime <<<";

const toml = (value: string) => JSON.stringify(value); // JSON's string escapes are valid TOML basic strings
const tomlTable = (map: Record<string, string>) =>
  `{ ${Object.entries(map)
    .map(([k, v]) => `${toml(k)} = ${toml(v)}`)
    .join(", ")} }`;

function codexTable(name: string, server: McpServerConfig): string {
  const lines = [`[mcp_servers.${toml(name)}]`];
  if (server.type === "local") {
    lines.push(`command = ${toml(server.command)}`);
    if (server.args?.length) lines.push(`args = [${server.args.map(toml).join(", ")}]`);
    if (server.env && Object.keys(server.env).length) lines.push(`env = ${tomlTable(server.env)}`);
    if (server.cwd) lines.push(`cwd = ${toml(server.cwd)}`);
  } else {
    lines.push(`url = ${toml(server.url)}`);
    if (server.bearerTokenEnvVar) lines.push(`bearer_token_env_var = ${toml(server.bearerTokenEnvVar)}`);
    if (server.headers && Object.keys(server.headers).length) lines.push(`http_headers = ${tomlTable(server.headers)}`);
    if (server.envHeaders && Object.keys(server.envHeaders).length) lines.push(`env_http_headers = ${tomlTable(server.envHeaders)}`);
  }
  if (server.timeoutMs) lines.push(`tool_timeout_sec = ${Math.ceil(server.timeoutMs / 1000)}`);
  return lines.join("\n");
}

/** Codex reads TOML: the runtime's servers live in one marked block at the end, rewritten whole. */
function updateCodex(existing: string | null, servers: Record<string, McpServerConfig>): McpFileUpdate {
  let text = existing ?? "";
  const begin = text.indexOf(CODEX_BLOCK_BEGIN);
  const end = text.indexOf(CODEX_BLOCK_END);
  if (begin !== -1 && end > begin) text = text.slice(0, begin).replace(/\n+$/, "\n") + text.slice(end + CODEX_BLOCK_END.length).replace(/^\n+/, "");
  const written: string[] = [];
  const conflicts: string[] = [];
  const tables: string[] = [];
  for (const [name, server] of Object.entries(servers)) {
    const own = new RegExp(`^\\s*\\[mcp_servers\\.(?:${name}|"${name}")\\]`, "m");
    if (own.test(text)) conflicts.push(name);
    else {
      tables.push(codexTable(name, server));
      written.push(name);
    }
  }
  if (tables.length) text = `${text.replace(/\n*$/, text.trim() ? "\n\n" : "")}${CODEX_BLOCK_BEGIN}\n${tables.join("\n\n")}\n${CODEX_BLOCK_END}\n`;
  return { text, written, conflicts };
}

/** The file's new text with `servers` (enabled ones) in place of what the runtime wrote before. */
export function updateMcpFile(format: McpFormat, existing: string | null, previous: string[], servers: Record<string, McpServerConfig>): McpFileUpdate {
  const enabled = Object.fromEntries(Object.entries(servers).filter(([, s]) => s.enabled !== false));
  return format === "codex" ? updateCodex(existing, enabled) : updateJson(format, existing, previous, enabled);
}
