/** Running a command to its end with a deadline and bounded output (the GitHub CLI): never waiting on a prompt. */
import { spawn } from "node:child_process";

export interface BoundedOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `command args…`; rejects when it cannot start (not installed), kills it past the deadline. */
export function spawnBounded(command: string, args: string[], options: { cwd: string; timeoutMs: number }): Promise<BoundedOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, GH_PROMPT_DISABLED: "1", GIT_TERMINAL_PROMPT: "0", NO_COLOR: "1", GH_NO_UPDATE_NOTIFIER: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.stdout.on("data", (c: Buffer) => {
      if (stdout.length < 65_536) stdout += c.toString("utf8");
    });
    child.stderr.on("data", (c: Buffer) => {
      if (stderr.length < 65_536) stderr += c.toString("utf8");
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
