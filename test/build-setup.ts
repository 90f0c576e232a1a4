import { buildAll } from "../scripts/build";

/**
 * The bundles some tests run (dist/worker.js, sidecar/dist/sidecar.js, sidecar/dist/mock-agent.js), built
 * once per vitest process: the `unit` and `node` projects both ask for them (global setups run one
 * project after the other, in the same process), and one build serves both.
 */
export function builtOnce(): Promise<void> {
  const key = Symbol.for("agent-runtime.test-build");
  const shared = globalThis as { [key]?: Promise<void> };
  shared[key] ??= buildAll();
  return shared[key];
}

export default async function setup(): Promise<void> {
  await builtOnce();
}
