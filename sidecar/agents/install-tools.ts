/**
 * What both installers use (the built-in agents' in installer.ts, the registry's in registry-install.ts):
 * running an install tool as a tracked process, and whether a path exists. Its own module, so the two
 * installers do not import each other.
 */
import { mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../atomic-file";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { ProcessManager } from "../processes/processes";

/**
 * Runs an install tool (npm, uv) without a shell as a tracked `system` process, so its output is in the
 * process logs; resolves to its stdout, or throws `install_failed` with the end of its stderr.
 */
export async function runTool(
  processes: ProcessManager,
  tool: { command: string; args: string[]; cwd: string; label: string; what: string; env?: Record<string, string> },
): Promise<string> {
  await mkdir(tool.cwd, { recursive: true });
  const proc = await processes.spawn({
    command: tool.command,
    args: tool.args,
    cwd: tool.cwd,
    owner: "system",
    interactive: false,
    tty: false,
    label: tool.label,
    env: { npm_config_update_notifier: "false", npm_config_fund: "false", ...tool.env },
  });
  proc.child.stdin?.end();
  await proc.exited;
  if (proc.info.exitCode !== 0) {
    const stderr = proc.outputText("stderr").trim().split("\n").slice(-8).join("\n");
    throw new ProblemError("install_failed", `${tool.what} (exit ${proc.info.exitCode ?? proc.info.signal}): ${stderr || "no output"}`);
  }
  return proc.outputText("stdout").trim();
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * Every agent's install folder is its own package scope: `<dataDir>/agents/package.json` says so. Node
 * reads a `.js` file by the nearest `package.json` above it, and a binary archive brings none; without
 * this, a data folder inside a project with `"type": "module"` (`.state/` under `npm start`) would make a
 * CommonJS agent load as an ES module and die at start.
 */
export async function ensurePackageBoundary(dataDir: string): Promise<void> {
  const file = join(dataDir, "agents", "package.json");
  if (await exists(file)) return;
  await mkdir(join(dataDir, "agents"), { recursive: true });
  await writeFileAtomic(
    file,
    `${JSON.stringify({ name: "agent-runtime-agents", private: true, type: "commonjs", description: "the agents this machine installed: a package boundary (nothing here inherits from a folder above)" }, null, 2)}\n`,
  );
}
