/**
 * Which Node runs an installed npm command (docs/architecture.md, "Agents"). A native program (Claude
 * Code's `claude.exe`, OpenCode's binary) needs none. A Node script runs on the sidecar's own Node when
 * that satisfies its package's `engines.node`; otherwise on `--agent-node`, else on the first `node` on
 * PATH that does; otherwise the install is refused, naming what the package needs. The choice is made at
 * install time (so a refusal leaves nothing) and recorded with the install; the launcher then runs the
 * script with that Node explicitly, never through the script's `#!/usr/bin/env node`, which would pick
 * whatever `node` comes first on PATH.
 */
import { execFile } from "node:child_process";
import { open, realpath } from "node:fs/promises";
import { PackageJson, readJsonFile } from "../json-file";
import { join } from "node:path";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { whichExecutable } from "../processes/processes";
import { satisfiesRange } from "./node-range";

/** How a Node script is run: the script's real file, and a Node other than the sidecar's when it needs one. */
export interface NodeScript {
  script: string;
  /** Absent: the sidecar's own Node (`process.execPath`, whatever it is when the agent starts). */
  node?: string;
}

export interface NodeChoiceOptions {
  /** `--agent-node` (AGENT_RUNTIME_AGENT_NODE). */
  agentNode: string | null;
  /** Where `node` is looked for when the sidecar's does not do (the sidecar's PATH). */
  path?: string;
}

/**
 * How to run `bin` (an npm `.bin` link or file) of the package installed in `packageDir`: null for a
 * native program, else the script and the Node that satisfies the package's engines.
 */
export async function nodeRunnerFor(packageDir: string, bin: string, options: NodeChoiceOptions): Promise<NodeScript | null> {
  const script = await realpath(bin);
  if (!(await isNodeScript(script))) return null;
  const manifest = await readJsonFile(join(packageDir, "package.json"), PackageJson);
  const needs = manifest.engines?.node;
  if (satisfiesRange(process.version, needs)) return { script };
  const candidates = [options.agentNode, await whichExecutable("node", options.path ?? process.env.PATH ?? "")].filter(
    (c, i, all): c is string => !!c && c !== process.execPath && all.indexOf(c) === i,
  );
  const seen: string[] = [];
  for (const node of candidates) {
    const version = await nodeVersion(node);
    seen.push(`${node} is ${version ?? "not a working node"}`);
    if (version && satisfiesRange(version, needs)) return { script, node };
  }
  throw new ProblemError(
    "package_unavailable",
    `${manifest.name ?? "the package"} needs Node ${needs}; the sidecar runs ${process.version}${seen.length ? ` and ${seen.join(", ")}` : ""}: start the sidecar with --agent-node <a node that satisfies it> (AGENT_RUNTIME_AGENT_NODE), or put one on its PATH`,
    { needs: `node ${needs}` },
  );
}

/**
 * A runner found in a staging folder, with its script where it will be once that folder is renamed to
 * `target` (installs are staged, checked, then renamed into place).
 */
export async function relocated(runner: NodeScript | null, staging: string, target: string): Promise<NodeScript | null> {
  if (!runner) return null;
  const realStaging = await realpath(staging);
  const inside = runner.script.startsWith(`${realStaging}/`) ? runner.script.slice(realStaging.length + 1) : null;
  return { ...runner, script: inside === null ? runner.script : join(target, inside) };
}

/** The command line that runs an installed command, as its install recorded it. */
export function commandLine(installed: { path: string; script?: string; node?: string }, args: string[]): { command: string; args: string[] } {
  if (installed.script === undefined) return { command: installed.path, args };
  return { command: installed.node ?? process.execPath, args: [installed.script, ...args] };
}

/** A JavaScript file (by its name, or a `#!` line naming node), as opposed to a native program. */
async function isNodeScript(file: string): Promise<boolean> {
  if (/\.[cm]?js$/.test(file)) return true;
  const handle = await open(file, "r");
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(256), 0, 256, 0);
    const head = buffer.subarray(0, bytesRead).toString("latin1");
    return head.startsWith("#!") && /\bnode\b/.test(head.split("\n")[0]!);
  } finally {
    await handle.close();
  }
}

export function nodeVersion(node: string): Promise<string | null> {
  return new Promise((done) => execFile(node, ["--version"], { timeout: 10_000 }, (err, out) => done(err ? null : out.trim())));
}
