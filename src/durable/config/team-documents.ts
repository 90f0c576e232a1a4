/**
 * The team's configuration documents (docs/architecture.md, "Team configuration"): skills, MCP servers,
 * agents and the permission policy, one of each per deployment, each with a version (its ETag), pushed to
 * every machine by the same fan-out (the sidecar applies the first three; the machine's object keeps the policy).
 * Shared by the team object, machine objects and routes.
 */
import { AgentsConfig, AgentsMachineStatus } from "@agent-runtime/protocol/agents-config";
import { McpConfig, McpMachineStatus } from "@agent-runtime/protocol/mcp";
import { SkillsConfig, SkillsMachineStatus } from "@agent-runtime/protocol/skills";
import { PolicyMachineStatus, TeamPolicy } from "@agent-runtime/protocol/policy";
import type { AppliedStatus } from "@agent-runtime/protocol/team-documents";
import { z } from "zod";

/** The kinds of document, in the order the team applies them. */
export const DOCUMENT_KINDS = ["skills", "mcp", "agents", "policy"] as const;
export type DocumentKind = (typeof DOCUMENT_KINDS)[number];

export interface StoredDocument<T> {
  /** Increases with every change; the ETag is `"<version>"`. Version 0: never set. */
  version: number;
  config: T;
  updatedAtMs: number | null;
}

/** A stored document read through the schema of its configuration. */
export function storedDocument<T>(config: z.ZodType<T>): z.ZodType<StoredDocument<T>> {
  return z.object({ version: z.number().int(), config, updatedAtMs: z.number().nullable() });
}

/** What each kind of document configures. */
export interface DocumentConfigs {
  skills: SkillsConfig;
  mcp: McpConfig;
  agents: AgentsConfig;
  /** Kept by each machine's object, never sent to a sidecar (docs/architecture.md, "The permission policy"). */
  policy: TeamPolicy;
}

export type TeamDocuments = { [K in DocumentKind]: StoredDocument<DocumentConfigs[K]> };

/** What a machine last applied, per document kind. */
export interface MachineStatusOf {
  skills: SkillsMachineStatus;
  mcp: McpMachineStatus;
  agents: AgentsMachineStatus;
  policy: PolicyMachineStatus;
}

/** A machine applied a document (its status, built by the machine object from the sidecar's answer), or could not. */
export type AppliedOutcome<S extends AppliedStatus = AppliedStatus> = { applied: Omit<S, "machine" | "error"> } | { error: string; version: number };

/** What the team keeps of one kind of document: its schemas (what is stored is read through them), its empty form, and a status that applied nothing. */
interface DocumentKindSpec<K extends DocumentKind> {
  config: z.ZodType<DocumentConfigs[K]>;
  status: z.ZodType<MachineStatusOf[K]>;
  empty: DocumentConfigs[K];
  nothingApplied: Omit<MachineStatusOf[K], keyof AppliedStatus>;
}

/**
 * The team's documents, one entry a kind (docs/architecture.md, "Adding a team document"): the object's
 * storage, the status of each machine and the fan-out read this registry, never a list per kind.
 */
export const DOCUMENT_REGISTRY: { [K in DocumentKind]: DocumentKindSpec<K> } = {
  skills: { config: SkillsConfig, status: SkillsMachineStatus, empty: { sources: [] }, nothingApplied: { skills: [], perAgent: {}, errors: [] } },
  mcp: { config: McpConfig, status: McpMachineStatus, empty: { servers: {} }, nothingApplied: { servers: [], perAgent: {}, errors: [] } },
  agents: { config: AgentsConfig, status: AgentsMachineStatus, empty: { agents: {} }, nothingApplied: { agents: {}, errors: [] } },
  policy: { config: TeamPolicy, status: PolicyMachineStatus, empty: { rules: [] }, nothingApplied: {} },
};

function emptyDocument<K extends DocumentKind>(kind: K): StoredDocument<DocumentConfigs[K]> {
  return { version: 0, config: DOCUMENT_REGISTRY[kind].empty, updatedAtMs: null };
}

export const EMPTY_DOCUMENTS: TeamDocuments = {
  skills: emptyDocument("skills"),
  mcp: emptyDocument("mcp"),
  agents: emptyDocument("agents"),
  policy: emptyDocument("policy"),
};

export function documentEtag(version: number): string {
  return `"${version}"`;
}

/** Does an If-Match header allow writing over this version? (`*`, or one of the listed ETags.) */
export function ifMatchAllows(header: string, version: number): boolean {
  return header
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === "*" || t === documentEtag(version));
}
