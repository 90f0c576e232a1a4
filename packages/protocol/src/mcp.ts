/**
 * MCP servers: the team-wide document, and per-directory entries on one machine (docs/architecture.md, "Team configuration").
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { BoundedRecord, NotOptionLike } from "./values";
import { strictResource } from "./resource";
import { machineStatus, NOT_APPLIED } from "./team-documents";

export const McpName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, "an MCP server name: letters, digits, '_' or '-', starting with a letter or digit");

const StringMap = z.record(z.string().min(1).max(256), z.string().max(8192));

/** One MCP server, as the sandbox-agent SDK describes it: a local command, or a remote URL. */
export const McpServerConfig = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("local"),
      command: NotOptionLike("command").describe("the executable"),
      args: z.array(z.string().max(8192)).max(256).optional(),
      env: StringMap.nullable().optional(),
      cwd: z.string().max(4096).nullable().optional(),
      enabled: z.boolean().nullable().optional(),
      timeoutMs: z.number().int().min(1).nullable().optional(),
    }),
    z.object({
      type: z.literal("remote"),
      url: z.url({ protocol: /^https?$/ }),
      transport: z.enum(["http", "sse"]).nullable().optional(),
      headers: StringMap.nullable().optional(),
      bearerTokenEnvVar: z.string().max(256).nullable().optional(),
      envHeaders: StringMap.nullable().optional(),
      oauth: z
        .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())]))
        .nullable()
        .optional()
        .describe("OAuth settings (client id, scopes, …), passed on as they are"),
      enabled: z.boolean().nullable().optional(),
      timeoutMs: z.number().int().min(1).nullable().optional(),
    }),
  ])
  .meta({ id: "McpServerConfig" });
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** The team's MCP document: servers by name, written where each installed agent reads its MCP servers. */
export const McpConfig = strictResource("McpConfig", {
  servers: BoundedRecord(McpName, McpServerConfig, 64, "servers").describe("by name"),
});
export type McpConfig = z.infer<typeof McpConfig>;

export const McpMachineStatus = machineStatus(
  "McpMachineStatus",
  { version: "the document version (ETag) this machine applied last", error: NOT_APPLIED },
  {
    servers: z.array(z.string()).describe("the servers written for at least one agent"),
    perAgent: z.record(z.string(), z.array(z.string())).describe("per agent installed on the machine: the servers in its configuration file"),
    errors: z.array(z.object({ agent: z.string(), error: z.string() })),
  },
);
export type McpMachineStatus = z.infer<typeof McpMachineStatus>;
