/**
 * The team's agents (docs/architecture.md, "Team configuration"): one document per deployment naming the
 * agents every machine should have, at which version, with which non-secret settings; every machine
 * installs or upgrades to it when it connects and when it changes, and reports per agent.
 */
import { AgentsConfig, AgentsMachineStatus } from "@agent-runtime/protocol/agents-config";
import { teamDocumentRoutes } from "./team-documents";

export const agentsConfigRoutes = teamDocumentRoutes({
  kind: "agents",
  title: "agents",
  document: AgentsConfig,
  status: AgentsMachineStatus,
});
