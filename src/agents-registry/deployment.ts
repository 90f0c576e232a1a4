/** The registry as this deployment reads it: its ACP_REGISTRY_URL, kept as long as its settings say (catalog.ts). */
import type { Env } from "../env";
import { settings } from "../settings";
import { type Catalog, defaultCache, loadCatalog } from "./catalog";

export function deploymentCatalog(env: Env): Promise<Catalog> {
  const { registryUrl, registryMaxAgeMs } = settings(env);
  return loadCatalog(registryUrl, defaultCache(), Date.now(), registryMaxAgeMs);
}
