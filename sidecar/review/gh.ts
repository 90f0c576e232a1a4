/** Running a command to its end with a deadline and bounded output (the GitHub CLI): never waiting on a prompt. */
import { execFile } from "node:child_process";

export interface BoundedOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `command args…`; rejects when it cannot start (not installed), kills it past the deadline. */
export function spawnBounded(command: string, args: string[], options: { cwd: string; timeoutMs: number }): Promise<BoundedOutcome> {
  const env = { ...process.env, GH_PROMPT_DISABLED: "1", GIT_TERMINAL_PROMPT: "0", NO_COLOR: "1", GH_NO_UPDATE_NOTIFIER: "1" };
  return new Promise((resolve, reject) =>
    execFile(command, args, { cwd: options.cwd, env, timeout: options.timeoutMs, killSignal: "SIGKILL", maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      // A string code is Node's (ENOENT: not installed); a number is the command's own exit.
      if (err && typeof err.code === "string") return reject(err);
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    }),
  );
}
