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

/**
 * Comment on an issue with the machine's GitHub CLI, when it is installed and signed in; otherwise say
 * why not (the task's end is still notified). Never a prompt: the CLI's are disabled above.
 */
export async function commentOnIssue(request: { cwd: string; repository: string; issue: number; body: string }): Promise<{
  posted: boolean;
  url: string | null;
  reason: string | null;
}> {
  const auth = await spawnBounded("gh", ["auth", "status"], { cwd: request.cwd, timeoutMs: 15_000 }).catch(() => null);
  if (!auth) return { posted: false, url: null, reason: "the GitHub CLI (gh) is not installed on the machine" };
  if (auth.code !== 0) return { posted: false, url: null, reason: "the GitHub CLI is not signed in on the machine (gh auth login)" };
  const args = ["issue", "comment", String(request.issue), "--repo", request.repository, "--body", request.body];
  const posted = await spawnBounded("gh", args, { cwd: request.cwd, timeoutMs: 120_000 });
  if (posted.code !== 0) return { posted: false, url: null, reason: `gh issue comment: ${posted.stderr.trim().slice(-500) || "failed"}` };
  return { posted: true, url: /https?:\/\/\S+/.exec(posted.stdout)?.[0] ?? null, reason: null };
}
