/**
 * Running the machine's `git` (docs/architecture.md, "Review and ship"): never waiting on a prompt
 * (no terminal, no askpass, ssh in batch mode), never longer than a deadline, never holding more output
 * than a bound; a refusal is a problem carrying git's own message.
 */
import { spawn } from "node:child_process";
import { ProblemError } from "@agent-runtime/protocol/problems";

export interface GitRun {
  /** The folder git runs in. */
  cwd: string;
  /** Variables set for this run over the sidecar's environment (GIT_DIR, GIT_INDEX_FILE, …). */
  env?: Record<string, string>;
  /** Written to git's stdin, then closed (default: nothing). */
  input?: string | Buffer;
  timeoutMs?: number;
  /** Standard output past this many bytes is not kept (`truncated` says so). */
  maxOutputBytes?: number;
  /** Answer a non-zero exit instead of throwing it. */
  allowFailure?: boolean;
}

export interface GitOutcome {
  code: number;
  stdout: Buffer;
  stderr: string;
  truncated: boolean;
  /** Bytes git wrote to standard output, kept or not. */
  totalBytes: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;

/**
 * The sidecar's environment without what would make git act on another repository (a GIT_DIR inherited
 * from a hook that started the sidecar) or ask a person anything.
 */
function gitEnvironment(extra: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("GIT_")) env[key] = value;
  // Credentials the user set up for git stay usable (a helper, an ssh key); a prompt is never waited on.
  if (process.env.GIT_SSH_COMMAND) env.GIT_SSH_COMMAND = process.env.GIT_SSH_COMMAND;
  if (process.env.GIT_SSH) env.GIT_SSH = process.env.GIT_SSH;
  return {
    ...env,
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "",
    SSH_ASKPASS: "",
    GCM_INTERACTIVE: "never",
    GIT_SSH_COMMAND: env.GIT_SSH_COMMAND ?? "ssh -o BatchMode=yes -o ConnectTimeout=15",
    GIT_EDITOR: "true",
    GIT_PAGER: "cat",
    LC_ALL: "C",
    ...extra,
  };
}

/** Run `git args…`; throws `git_failed` with git's message on a non-zero exit (unless `allowFailure`), `timeout` past the deadline. */
export function runGit(args: string[], run: GitRun): Promise<GitOutcome> {
  const timeoutMs = run.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxOutput = run.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { cwd: run.cwd, env: gitEnvironment(run.env), stdio: ["pipe", "pipe", "pipe"], detached: true });
    const out: Buffer[] = [];
    let outBytes = 0;
    let truncated = false;
    let stderr = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      // Its whole group: a credential helper or ssh it started must not outlive it.
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutMs);
    let totalBytes = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      totalBytes += chunk.length;
      if (outBytes >= maxOutput) {
        truncated = true;
        return;
      }
      const room = maxOutput - outBytes;
      if (chunk.length > room) truncated = true;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      out.push(kept);
      outBytes += kept.length;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 16_384) stderr += chunk.toString("utf8");
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new ProblemError("git_failed", `could not run git on this machine: ${err.message}`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      const outcome = { code: code ?? -1, stdout: Buffer.concat(out), stderr: stderr.trim(), truncated, totalBytes };
      if (timedOut)
        return reject(
          new ProblemError("timeout", `git ${args[0]} did not finish within ${Math.round(timeoutMs / 1000)} s`, { git: outcome.stderr.slice(-2000) }),
        );
      if (outcome.code !== 0 && !run.allowFailure) return reject(gitProblem(args, outcome.stderr));
      resolve(outcome);
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(run.input ?? "");
  });
}

/** git's own words, last lines first in importance: what a person needs to act on a refusal. */
export function gitProblem(args: string[], stderr: string): ProblemError {
  const message = stderr.trim() || "git exited without a message";
  const said = message.length > 2000 ? `…${message.slice(-2000)}` : message;
  return new ProblemError("git_failed", `git ${args[0]}: ${said}`, { git: said });
}

/** The text of a run's output (git speaks UTF-8 with core.quotePath off). */
export function textOf(outcome: GitOutcome): string {
  return outcome.stdout.toString("utf8");
}

/** NUL-separated output (`-z`) as its fields, the trailing empty one dropped. */
export function fieldsOf(outcome: GitOutcome): string[] {
  const text = textOf(outcome);
  const fields = text.split("\0");
  if (fields.at(-1) === "") fields.pop();
  return fields;
}
