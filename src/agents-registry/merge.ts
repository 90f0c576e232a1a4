/** The registry's entries beside what a machine has (GET /v1/agents): pure, tested beside. */
import { distributionKinds, installPlan, type RegistryAgent, registryIdOf } from "@agent-runtime/protocol/registry";
import { type AgentInfo, type AgentRegistryInfo, UNKNOWN_CAPABILITIES } from "@agent-runtime/protocol/agents";

export function registryInfo(entry: RegistryAgent, platform: string | null): AgentRegistryInfo {
  const plan = installPlan(entry, platform);
  return {
    id: entry.id,
    version: entry.version,
    distributions: distributionKinds(entry),
    installable: plan.kind !== null,
    reason: plan.kind === null ? plan.reason : null,
  };
}

/**
 * Every agent of the machine with what the registry says of it, then every registry agent the machine
 * lacks. A built-in agent is matched by its registry id (`claude` is `claude-acp`). An installed agent is
 * behind when the registry offers another version of what runs it (for a built-in agent driven through an
 * adapter, the adapter's version: what the registry's entry names).
 */
export function withRegistry(machineAgents: AgentInfo[], catalog: RegistryAgent[], platform: string | null): AgentInfo[] {
  const byId = new Map(catalog.map((entry) => [entry.id, entry]));
  const listed = new Set<string>();
  const agents = machineAgents.map((agent) => {
    const registryId = registryIdOf(agent.id);
    const entry = byId.get(registryId);
    listed.add(registryId);
    if (!entry) return { ...agent, registry: null, updateAvailable: null };
    const updateAvailable = !agent.installed || !agent.installedVersion ? null : agent.installedVersion !== entry.version;
    return { ...agent, name: agent.name ?? entry.name, description: entry.description, registry: registryInfo(entry, platform), updateAvailable };
  });
  for (const entry of catalog) {
    if (listed.has(entry.id)) continue;
    agents.push({
      id: entry.id,
      name: entry.name,
      description: entry.description,
      installed: false,
      installedVersion: null,
      credentialsAvailable: false,
      capabilities: UNKNOWN_CAPABILITIES,
      registry: registryInfo(entry, platform),
      updateAvailable: null,
    });
  }
  return agents;
}
