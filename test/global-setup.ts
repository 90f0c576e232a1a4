import { buildAll } from "../scripts/build";

/** The tests run the real bundles (workerd loads dist/worker.js; sidecars run sidecar/dist/sidecar.js). */
export default async function setup(): Promise<void> {
  await buildAll();
}
