/** The tunnel's configuration operations: the team's skills and MCP documents applied, and per-directory entries. */
import { z } from "zod";
import { MachinePath } from "../files";
import { McpConfig, McpMachineStatus, McpName, McpServerConfig } from "../mcp";
import { SkillName, SkillsConfig, SkillsMachineStatus } from "../skills";
import { applyResultOf } from "../team-documents";
import { Deleted, MINUTE, type OpDefinition } from "./define";

export const SkillsApplyArgs = z.object({ version: z.string(), config: SkillsConfig });
export type SkillsApplyArgs = z.infer<typeof SkillsApplyArgs>;

/** `unchanged`: this machine had applied exactly this configuration already, and nothing was fetched or copied. */
export const SkillsApplyResult = applyResultOf(SkillsMachineStatus);
export type SkillsApplyResult = z.infer<typeof SkillsApplyResult>;

export const McpApplyArgs = z.object({ version: z.string(), config: McpConfig });
export type McpApplyArgs = z.infer<typeof McpApplyArgs>;

/** `unchanged`: this machine had written exactly this document for exactly these agents already. */
export const McpApplyResult = applyResultOf(McpMachineStatus);
export type McpApplyResult = z.infer<typeof McpApplyResult>;

/** Cloning several repositories (skills) can take a while. */
const APPLY_MS = 5 * 60_000;

export const CONFIG_OPS = {
  "skills.apply": { deadlineMs: APPLY_MS, args: SkillsApplyArgs, result: SkillsApplyResult },
  "mcp.apply": { deadlineMs: APPLY_MS, args: McpApplyArgs, result: McpApplyResult },
  /** Per-directory entries (stored in `<directory>/.sandbox-agent/config/`, as sandbox-agent keeps them). */
  "mcp.entry.get": { deadlineMs: MINUTE, readOnly: true, args: z.object({ directory: MachinePath, name: McpName }), result: McpServerConfig },
  "mcp.entry.put": {
    deadlineMs: MINUTE,
    args: z.object({ directory: MachinePath, name: McpName, config: McpServerConfig }),
    result: z.object({ path: z.string() }),
  },
  "mcp.entry.delete": { deadlineMs: MINUTE, args: z.object({ directory: MachinePath, name: McpName }), result: Deleted },
  "skills.entry.get": { deadlineMs: MINUTE, readOnly: true, args: z.object({ directory: MachinePath, name: SkillName }), result: SkillsConfig },
  /** Answers with the apply of every entry of that directory into its agents' skills folders. */
  "skills.entry.put": { deadlineMs: APPLY_MS, args: z.object({ directory: MachinePath, name: SkillName, config: SkillsConfig }), result: SkillsApplyResult },
  "skills.entry.delete": {
    deadlineMs: APPLY_MS,
    args: z.object({ directory: MachinePath, name: SkillName }),
    result: SkillsApplyResult.extend({ deleted: z.boolean() }),
  },
} as const satisfies Record<string, OpDefinition>;
