/**
 * The team's configuration documents (docs/architecture.md, "Team configuration"): skills, MCP servers and
 * agents, one of each per deployment, each with a version (its ETag), pushed to every machine by the same fan-out.
 * Shared by the team object, machine objects and routes.
 */
import type { AgentsConfig, AgentsMachineStatus } from "@agent-runtime/protocol/agents-config";
import type { McpConfig, McpMachineStatus } from "@agent-runtime/protocol/mcp";
import type { SkillsConfig, SkillsMachineStatus } from "@agent-runtime/protocol/skills";

export type DocumentKind = "skills" | "mcp" | "agents";
export const DOCUMENT_KINDS: readonly DocumentKind[] = ["skills", "mcp", "agents"];

export interface StoredDocument<T> {
  /** Increases with every change; the ETag is `"<version>"`. Version 0: never set. */
  version: number;
  config: T;
  updatedAtMs: number | null;
}

export interface TeamDocuments {
  skills: StoredDocument<SkillsConfig>;
  mcp: StoredDocument<McpConfig>;
  agents: StoredDocument<AgentsConfig>;
}

/** What a machine last applied, per document kind. */
export interface MachineStatusOf {
  skills: SkillsMachineStatus;
  mcp: McpMachineStatus;
  agents: AgentsMachineStatus;
}

export const EMPTY_DOCUMENTS: TeamDocuments = {
  skills: { version: 0, config: { sources: [] }, updatedAtMs: null },
  mcp: { version: 0, config: { servers: {} }, updatedAtMs: null },
  agents: { version: 0, config: { agents: {} }, updatedAtMs: null },
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
