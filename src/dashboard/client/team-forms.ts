/**
 * The team's documents (skills, MCP servers, agents) as lists of entries a person edits with labelled
 * fields, not JSON (docs/architecture.md, "Team configuration"). Each kind says how its document becomes a
 * list and back, which fields an entry has, and checks an entry with the schema the worker checks it with,
 * so a mistake is said beside its field before anything is saved. Fields a form does not show (an MCP
 * server's `oauth`, `timeoutMs`) are kept as they were: the JSON, one tap away, edits those.
 */
import type { z } from "zod";
import { AgentsConfigEntry } from "@agent-runtime/protocol/agents-config";
import { McpName, McpServerConfig } from "@agent-runtime/protocol/mcp";
import { SkillSource } from "@agent-runtime/protocol/skills";
import { AgentId } from "@agent-runtime/protocol/values";
import { isRecord } from "./api";

export type DocumentKind = "skills" | "mcp" | "agents";

/** One entry of a document: its key (a name, or a skill source's place in the list) and its value. */
export interface Entry {
  key: string;
  value: Record<string, unknown>;
}

export type Form = Record<string, string>;
export type FieldErrors = Record<string, string>;

export interface Field {
  name: string;
  label: string;
  /** A one-line input, a choice, or lines of text. */
  input: "text" | "select" | "lines";
  options?: readonly (readonly [value: string, words: string])[];
  placeholder?: string;
  /** Shown only for some choices (a remote server has no command). */
  shown?: (form: Form) => boolean;
}

export interface KindSpec {
  title: string;
  /** What one entry is called: "Add an MCP server". */
  noun: string;
  article: "a" | "an";
  hint: string;
  entries: (document: unknown) => Entry[];
  document: (entries: Entry[]) => Record<string, unknown>;
  /** An entry in one line of words. */
  summary: (entry: Entry) => string;
  fields: Field[];
  formOf: (entry: Entry | null) => Form;
  /** The entry the form describes, or what is wrong with it, by field. `others`: the other entries' keys. */
  entryOf: (form: Form, original: Entry | null, others: string[]) => { entry: Entry } | { errors: FieldErrors };
  /** The entry a field of the worker's 400 (`servers.github.url`) is about, and the field's name in the form. */
  fieldOf: (path: string) => { key: string; field: string } | null;
}

const record = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {});
const words = (text: string): string[] =>
  text
    .split(/[,\s]+/)
    .map((w) => w.trim())
    .filter(Boolean);
const lines = (text: string): string[] =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
const text = (v: unknown): string => (typeof v === "string" ? v : "");

/** `NAME=value` lines (or `Name: value` for headers) as a record; a line without its separator is an error. */
export function pairsOf(value: string, separator: "=" | ":"): { pairs: Record<string, string> } | { error: string } {
  const pairs: Record<string, string> = {};
  for (const line of lines(value)) {
    const at = line.indexOf(separator);
    if (at <= 0) return { error: `"${line}" is not ${separator === "=" ? "NAME=value" : "Name: value"}` };
    pairs[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return { pairs };
}
const pairsText = (v: unknown, separator: "=" | ": "): string =>
  Object.entries(record(v))
    .map(([k, x]) => `${k}${separator}${text(x)}`)
    .join("\n");

/** The schema's complaints, by the form's field (the first part of each issue's path). */
function issues(error: z.ZodError, fieldOf: (path: PropertyKey[]) => string = (p) => String(p[0] ?? "")): FieldErrors {
  const out: FieldErrors = {};
  for (const issue of error.issues) {
    const field = fieldOf(issue.path);
    out[field] ??= issue.message;
  }
  return out;
}

/** An entry's value without the form's own fields, then with those the form filled (empty ones left out). */
function merged(original: Entry | null, managed: readonly string[], filled: Record<string, unknown>): Record<string, unknown> {
  const kept = Object.fromEntries(Object.entries(original?.value ?? {}).filter(([k]) => !managed.includes(k)));
  const given = Object.entries(filled).filter(([, v]) => v !== undefined && v !== "" && !(Array.isArray(v) && v.length === 0));
  return { ...kept, ...Object.fromEntries(given) };
}

const SKILL_FIELDS = ["type", "source", "ref", "skills", "subpath"] as const;

const skills: KindSpec = {
  title: "Team skills",
  noun: "skill source",
  article: "a",
  hint: "Every machine installs the skills of these sources for each agent it has.",
  entries: (document) => {
    const sources = record(document).sources;
    return (Array.isArray(sources) ? sources : []).map((value, i) => ({ key: String(i), value: record(value) }));
  },
  document: (entries) => ({ sources: entries.map((e) => e.value) }),
  summary: ({ value }) => {
    const only = Array.isArray(value.skills) && value.skills.length ? ` (only ${value.skills.join(", ")})` : "";
    return `${text(value.type)} ${text(value.source)}${value.ref ? ` at ${text(value.ref)}` : ""}${value.subpath ? `, folder ${text(value.subpath)}` : ""}${only}`;
  },
  fields: [
    {
      name: "type",
      label: "From",
      input: "select",
      options: [
        ["github", "a GitHub repository"],
        ["git", "a git URL"],
        ["local", "a folder on each machine"],
      ],
    },
    { name: "source", label: "Source", input: "text", placeholder: "owner/repo" },
    { name: "ref", label: "Branch, tag or commit (none: the default)", input: "text", shown: (f) => f.type !== "local" },
    { name: "skills", label: "Only these skills (none: all)", input: "text", placeholder: "pdf, review" },
    { name: "subpath", label: "Folder inside it (none: its top)", input: "text", placeholder: "skills" },
  ],
  formOf: (entry) => {
    const v = entry?.value ?? {};
    return {
      type: text(v.type) || "github",
      source: text(v.source),
      ref: text(v.ref),
      skills: Array.isArray(v.skills) ? v.skills.join(", ") : "",
      subpath: text(v.subpath),
    };
  },
  entryOf: (form, original) => {
    const value = merged(original, SKILL_FIELDS, {
      type: form.type,
      source: form.source?.trim(),
      ref: form.type === "local" ? undefined : form.ref?.trim(),
      skills: words(form.skills ?? ""),
      subpath: form.subpath?.trim(),
    });
    const checked = SkillSource.safeParse(value);
    return checked.success ? { entry: { key: original?.key ?? "new", value } } : { errors: issues(checked.error) };
  },
  fieldOf: (path) => {
    const [top, index, field] = path.split(".");
    return top === "sources" && index !== undefined ? { key: index, field: field ?? "source" } : null;
  },
};

/** A document that holds its entries by name under one field (`servers`, `agents`); `nameField`: the form's. */
function byName(field: string, nameField: string): Pick<KindSpec, "entries" | "document" | "fieldOf"> {
  return {
    entries: (document) => Object.entries(record(record(document)[field])).map(([key, value]) => ({ key, value: record(value) })),
    document: (entries) => ({ [field]: Object.fromEntries(entries.map((e) => [e.key, e.value])) }),
    fieldOf: (path) => {
      const [top, key, inner] = path.split(".");
      return top === field && key ? { key, field: inner ?? nameField } : null;
    },
  };
}

const MCP_FIELDS = ["type", "command", "args", "env", "cwd", "url", "transport", "headers", "bearerTokenEnvVar"] as const;

const mcp: KindSpec = {
  title: "Team MCP servers",
  noun: "MCP server",
  article: "an",
  hint: "Every machine writes these where each of its agents reads its MCP servers.",
  ...byName("servers", "name"),
  summary: ({ key, value }) =>
    value.type === "remote"
      ? `${key}: ${text(value.url)}`
      : `${key}: ${[text(value.command), ...(Array.isArray(value.args) ? value.args.map(text) : [])].join(" ")}`,
  fields: [
    { name: "name", label: "Name", input: "text", placeholder: "github" },
    {
      name: "type",
      label: "Runs as",
      input: "select",
      options: [
        ["local", "a command on each machine"],
        ["remote", "a server at a URL"],
      ],
    },
    { name: "command", label: "Command", input: "text", placeholder: "npx", shown: (f) => f.type === "local" },
    {
      name: "args",
      label: "Arguments, one per line",
      input: "lines",
      placeholder: "-y\n@modelcontextprotocol/server-github",
      shown: (f) => f.type === "local",
    },
    { name: "env", label: "Environment, NAME=value per line", input: "lines", shown: (f) => f.type === "local" },
    { name: "cwd", label: "Folder it runs in (none: the session's)", input: "text", shown: (f) => f.type === "local" },
    { name: "url", label: "URL", input: "text", placeholder: "https://mcp.example.com/mcp", shown: (f) => f.type === "remote" },
    {
      name: "transport",
      label: "Transport",
      input: "select",
      options: [
        ["", "the agent's default"],
        ["http", "HTTP"],
        ["sse", "SSE"],
      ],
      shown: (f) => f.type === "remote",
    },
    { name: "headers", label: "Headers, Name: value per line", input: "lines", shown: (f) => f.type === "remote" },
    {
      name: "bearerTokenEnvVar",
      label: "Token from this variable on each machine",
      input: "text",
      placeholder: "GITHUB_TOKEN",
      shown: (f) => f.type === "remote",
    },
  ],
  formOf: (entry) => {
    const v = entry?.value ?? {};
    return {
      name: entry?.key ?? "",
      type: text(v.type) || "local",
      command: text(v.command),
      args: Array.isArray(v.args) ? v.args.map(text).join("\n") : "",
      env: pairsText(v.env, "="),
      cwd: text(v.cwd),
      url: text(v.url),
      transport: text(v.transport),
      headers: pairsText(v.headers, ": "),
      bearerTokenEnvVar: text(v.bearerTokenEnvVar),
    };
  },
  entryOf: (form, original, others) => {
    const errors: FieldErrors = {};
    const name = (form.name ?? "").trim();
    const named = McpName.safeParse(name);
    if (!named.success) errors.name = named.error.issues[0]?.message ?? "not a name";
    else if (others.includes(name)) errors.name = `there is already a server named ${name}`;
    const local = form.type === "local";
    const env = local ? pairsOf(form.env ?? "", "=") : { pairs: {} };
    const headers = local ? { pairs: {} } : pairsOf(form.headers ?? "", ":");
    if ("error" in env) errors.env = env.error;
    if ("error" in headers) errors.headers = headers.error;
    // A server that changed how it runs keeps none of the other kind's settings.
    const base = original && original.value.type === form.type ? original : null;
    const value = merged(
      base,
      MCP_FIELDS,
      local
        ? {
            type: "local",
            command: form.command?.trim(),
            args: lines(form.args ?? ""),
            env: "pairs" in env && Object.keys(env.pairs).length ? env.pairs : undefined,
            cwd: form.cwd?.trim(),
          }
        : {
            type: "remote",
            url: form.url?.trim(),
            transport: form.transport || undefined,
            headers: "pairs" in headers && Object.keys(headers.pairs).length ? headers.pairs : undefined,
            bearerTokenEnvVar: form.bearerTokenEnvVar?.trim(),
          },
    );
    const checked = McpServerConfig.safeParse(value);
    if (!checked.success) for (const [field, message] of Object.entries(issues(checked.error))) errors[field] ??= message;
    return Object.keys(errors).length ? { errors } : { entry: { key: name, value } };
  },
};

const agents: KindSpec = {
  title: "Team agents",
  noun: "agent",
  article: "an",
  hint: "Every machine installs these, at the registry's latest version or the one pinned, with non-secret settings (credentials stay on each machine).",
  ...byName("agents", "agent"),
  summary: ({ key, value }) => {
    const env = Object.keys(record(value.env));
    return `${key} ${text(value.version) || "latest"}${env.length ? ` with ${env.join(", ")}` : ""}`;
  },
  fields: [
    { name: "agent", label: "Agent", input: "text", placeholder: "claude, codex, gemini or a registry id" },
    { name: "version", label: "Version (latest, or one to pin)", input: "text", placeholder: "latest" },
    { name: "env", label: "Settings, NAME=value per line (no secrets)", input: "lines", placeholder: "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" },
  ],
  formOf: (entry) => ({ agent: entry?.key ?? "", version: text(entry?.value.version) || "latest", env: pairsText(entry?.value.env, "=") }),
  entryOf: (form, original, others) => {
    const errors: FieldErrors = {};
    const agent = (form.agent ?? "").trim();
    const id = AgentId.safeParse(agent);
    if (!id.success) errors.agent = id.error.issues[0]?.message ?? "not an agent id";
    else if (others.includes(agent)) errors.agent = `${agent} is already in the list`;
    const env = pairsOf(form.env ?? "", "=");
    if ("error" in env) errors.env = env.error;
    const value = merged(original, ["version", "env"], {
      version: (form.version ?? "").trim() || "latest",
      env: "pairs" in env && Object.keys(env.pairs).length ? env.pairs : undefined,
    });
    const checked = AgentsConfigEntry.safeParse(value);
    if (!checked.success) for (const [field, message] of Object.entries(issues(checked.error))) errors[field] ??= message;
    return Object.keys(errors).length ? { errors } : { entry: { key: agent, value } };
  },
};

export const KINDS: Record<DocumentKind, KindSpec> = { skills, mcp, agents };

/** The list with one entry put in (`at`: the place of the one it replaces; null: added at the end). */
export function withEntry(list: Entry[], entry: Entry, at: number | null, keyed: boolean): Entry[] {
  const next = at === null ? [...list, entry] : list.map((e, i) => (i === at ? entry : e));
  // A skill source's key is its place in the list, which the worker's errors name.
  return keyed ? next : next.map((e, i) => ({ ...e, key: String(i) }));
}
