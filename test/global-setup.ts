import { buildAll } from "../scripts/build";
import { ensureNode24 } from "./node24";

/**
 * The tests run the real bundles (workerd loads dist/worker.js; sidecars run sidecar/dist/sidecar.js),
 * and some sidecars on Node 24 (test/node24.ts).
 */
export default async function setup(): Promise<void> {
  await Promise.all([buildAll(), ensureNode24()]);
}
