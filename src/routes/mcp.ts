/** The team's MCP servers (docs/architecture.md, "Team configuration"): one document per deployment, written for every agent of every machine; per-folder entries on one machine. */
import { relay } from "../http/machine";
import { McpConfig, McpMachineStatus, McpName, McpServerConfig } from "@agent-runtime/protocol/mcp";
import { teamDocumentRoutes } from "./team-documents";

export const mcpRoutes = teamDocumentRoutes({
  kind: "mcp",
  title: "MCP servers",
  document: McpConfig,
  status: McpMachineStatus,
  perDirectory: {
    nameParam: "mcpName",
    name: McpName,
    entry: McpServerConfig,
    get: (c, directory, name) => relay(c, "mcp.entry.get", { directory, name }),
    put: async (c, directory, name, config) => void (await relay(c, "mcp.entry.put", { directory, name, config })),
    delete: async (c, directory, name) => void (await relay(c, "mcp.entry.delete", { directory, name })),
  },
});
