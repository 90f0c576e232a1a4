import { builtOnce } from "./build-setup";
import { ensureNode } from "./node-releases";

/**
 * The tests run the real bundles (workerd loads dist/worker.js; sidecars run sidecar/dist/sidecar.js),
 * and some sidecars on Node 22 and 24 (test/node-releases.ts).
 */
export default async function setup(): Promise<void> {
  await Promise.all([builtOnce(), ensureNode(22), ensureNode(24)]);
}
