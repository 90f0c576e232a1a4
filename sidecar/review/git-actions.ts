/**
 * Shipping from the machine (docs/architecture.md, "Review and ship"): status, commit, push and pull
 * request, run with the machine's own git, its own credentials and its own GitHub CLI. The runtime
 * never stores a forge token; nothing waits on a prompt (git-run.ts).
 */
import { existsSync } from "node:fs";
import type { z } from "zod";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type {
  GitCommitRequest,
  GitCommitResult,
  GitPushRequest,
  GitPushResult,
  GitStatus,
  PullRequestRequest,
  PullRequestResult,
} from "@agent-runtime/protocol/review";
import { fieldsOf, runGit, textOf } from "./git-run";
import { spawnBounded } from "./gh";

const MAX_STATUS_FILES = 2_000;
const REMOTE_TIMEOUT_MS = 90_000;

/** The repository a folder is in: its top folder, or a 422 saying the folder is not in one. */
export async function repositoryOf(cwd: string): Promise<string> {
  if (!existsSync(cwd)) throw new ProblemError("not_found", `no folder '${cwd}' on this machine`);
  const outcome = await runGit(["rev-parse", "--show-toplevel"], { cwd, allowFailure: true });
  if (outcome.code !== 0) throw new ProblemError("git_failed", `'${cwd}' is not in a git repository`, { git: outcome.stderr });
  return textOf(outcome).trim();
}

export async function gitStatus(cwd: string): Promise<GitStatus> {
  const root = await repositoryOf(cwd);
  const fields = fieldsOf(await runGit(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"], { cwd: root }));
  const status: GitStatus = { root, branch: null, head: null, upstream: null, ahead: 0, behind: 0, files: [], truncated: false };
  for (let i = 0; i < fields.length; i++) {
    const line = fields[i]!;
    if (line.startsWith("# branch.oid ")) status.head = line.slice(13) === "(initial)" ? null : line.slice(13);
    else if (line.startsWith("# branch.head ")) status.branch = line.slice(14) === "(detached)" ? null : line.slice(14);
    else if (line.startsWith("# branch.upstream ")) status.upstream = line.slice(18);
    else if (line.startsWith("# branch.ab ")) {
      const [ahead = "+0", behind = "-0"] = line.slice(12).split(" ");
      status.ahead = Math.abs(Number(ahead)) || 0;
      status.behind = Math.abs(Number(behind)) || 0;
    } else if (line.startsWith("? ")) status.files.push({ path: line.slice(2), index: "?", worktree: "?" });
    else if (line.startsWith("1 ") || line.startsWith("u ")) {
      const parts = line.split(" ");
      const xy = parts[1] ?? "..";
      const path = parts.slice(line.startsWith("1 ") ? 8 : 10).join(" ");
      status.files.push({ path, index: xy[0]!, worktree: xy[1]! });
    } else if (line.startsWith("2 ")) {
      const parts = line.split(" ");
      const xy = parts[1] ?? "..";
      status.files.push({ path: parts.slice(9).join(" "), index: xy[0]!, worktree: xy[1]!, previousPath: fields[++i] ?? "" });
    }
  }
  status.truncated = status.files.length > MAX_STATUS_FILES;
  status.files = status.files.slice(0, MAX_STATUS_FILES);
  // Push and a pull request are offered only where there is somewhere to push.
  status.remotes = textOf(await runGit(["remote"], { cwd: root }))
    .split("\n")
    .filter(Boolean)
    .slice(0, 100);
  return status;
}

/** Commit every change of the repository (or only `paths`), with the machine's own identity and hooks. */
export async function gitCommit(request: z.output<typeof GitCommitRequest>): Promise<z.output<typeof GitCommitResult>> {
  const root = await repositoryOf(request.cwd);
  const pathspec = request.paths && request.paths.length > 0 ? request.paths : null;
  const literal = { GIT_LITERAL_PATHSPECS: "1" };
  if (pathspec) await runGit(["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], { cwd: root, env: literal, input: `${pathspec.join("\0")}\0` });
  else await runGit(["add", "-A"], { cwd: root });
  const staged = await runGit(["diff", "--cached", "--quiet", ...(pathspec ? ["--", ...pathspec] : [])], { cwd: root, env: literal, allowFailure: true });
  if (staged.code === 0) throw new ProblemError("conflict", "nothing to commit: the files named have no change");
  // With paths named, only they are committed (git commit --only), whatever else is staged.
  if (pathspec)
    await runGit(["commit", "-q", "-m", request.message, "--only", "--pathspec-from-file=-", "--pathspec-file-nul"], {
      cwd: root,
      env: literal,
      input: `${pathspec.join("\0")}\0`,
      timeoutMs: 60_000,
    });
  else await runGit(["commit", "-q", "-F", "-"], { cwd: root, input: request.message, timeoutMs: 60_000 });
  const commit = textOf(await runGit(["rev-parse", "HEAD"], { cwd: root })).trim();
  const branch = textOf(await runGit(["branch", "--show-current"], { cwd: root })).trim() || null;
  const summary = textOf(await runGit(["log", "-1", "--format=%h %s"], { cwd: root })).trim();
  return { commit, branch, summary };
}

/** Push the current branch (or `branch`) to its upstream, or to `remote` (default origin). */
export async function gitPush(request: z.output<typeof GitPushRequest>): Promise<z.output<typeof GitPushResult>> {
  const root = await repositoryOf(request.cwd);
  const branch = request.branch ?? (textOf(await runGit(["branch", "--show-current"], { cwd: root })).trim() || null);
  if (!branch) throw new ProblemError("conflict", "HEAD is detached: name the branch to push");
  const remote = request.remote ?? (await upstreamRemote(root, branch)) ?? "origin";
  const outcome = await runGit(["push", "--porcelain", ...(request.setUpstream ? ["--set-upstream"] : []), remote, `${branch}:${branch}`], {
    cwd: root,
    timeoutMs: REMOTE_TIMEOUT_MS,
  });
  return { remote, branch, output: `${textOf(outcome)}${outcome.stderr ? `\n${outcome.stderr}` : ""}`.trim().slice(0, 4000) };
}

async function upstreamRemote(root: string, branch: string): Promise<string | null> {
  const outcome = await runGit(["config", "--get", `branch.${branch}.remote`], { cwd: root, allowFailure: true });
  return outcome.code === 0 ? textOf(outcome).trim() || null : null;
}

/** A remote's web address and forge, from its URL (https, ssh or scp-like), or null for another host. */
export function forgeOf(remoteUrl: string): { kind: "github" | "gitlab"; web: string } | null {
  const url = remoteUrl.trim();
  const match = /^(?:https?:\/\/(?:[^@/]+@)?|ssh:\/\/(?:[^@/]+@)?|[^@/\s]+@)([^/:\s]+)(?::\d+)?[:/](.+?)(?:\.git)?\/?$/.exec(url);
  if (!match) return null;
  const [, host = "", path = ""] = match;
  const kind = host === "github.com" || host.startsWith("github.") ? "github" : host === "gitlab.com" || host.startsWith("gitlab.") ? "gitlab" : null;
  return kind ? { kind, web: `https://${host}/${path}` } : null;
}

/**
 * Open a pull request for the current branch: with the GitHub CLI when it is installed and signed in on
 * the machine; otherwise answer the page that opens one (GitHub or GitLab) and why none was opened.
 */
export async function pullRequest(request: z.output<typeof PullRequestRequest>): Promise<z.output<typeof PullRequestResult>> {
  const root = await repositoryOf(request.cwd);
  const branch = textOf(await runGit(["branch", "--show-current"], { cwd: root })).trim();
  if (!branch) throw new ProblemError("conflict", "HEAD is detached: a pull request needs a branch");
  const remote = (await upstreamRemote(root, branch)) ?? "origin";
  const urlOutcome = await runGit(["remote", "get-url", remote], { cwd: root, allowFailure: true });
  const forge = urlOutcome.code === 0 ? forgeOf(textOf(urlOutcome)) : null;
  const base = request.base ?? (await defaultBranch(root, remote)) ?? "main";
  const gh = await spawnBounded("gh", ["auth", "status"], { cwd: root, timeoutMs: 15_000 }).catch(() => null);
  if (gh && gh.code === 0 && forge?.kind === "github") {
    const args = [
      "pr",
      "create",
      "--title",
      request.title,
      "--body",
      request.body ?? "",
      "--base",
      base,
      "--head",
      branch,
      ...(request.draft ? ["--draft"] : []),
    ];
    const created = await spawnBounded("gh", args, { cwd: root, timeoutMs: REMOTE_TIMEOUT_MS });
    if (created.code !== 0)
      throw new ProblemError("git_failed", `gh pr create: ${created.stderr.trim().slice(-2000) || "failed"}`, { gh: created.stderr.trim().slice(-2000) });
    const url = /https?:\/\/\S+/.exec(created.stdout)?.[0] ?? null;
    return { opened: true, url };
  }
  const why = !gh
    ? "the GitHub CLI (gh) is not installed on the machine"
    : gh.code !== 0
      ? "the GitHub CLI is not signed in on the machine (gh auth login)"
      : "the remote is not on GitHub";
  if (!forge) return { opened: false, url: null, reason: `${why}, and remote '${remote}' is neither GitHub nor GitLab: open the pull request on its forge` };
  const url =
    forge.kind === "github"
      ? `${forge.web}/compare/${encodeURIComponent(base)}...${encodeURIComponent(branch)}?expand=1`
      : `${forge.web}/-/merge_requests/new?${new URLSearchParams({ "merge_request[source_branch]": branch, "merge_request[target_branch]": base })}`;
  return { opened: false, url, reason: forge.kind === "gitlab" ? "a GitLab remote: open the merge request at this page" : `${why}: open it at this page` };
}

/** The remote's default branch as the machine last fetched it (refs/remotes/<remote>/HEAD). */
async function defaultBranch(root: string, remote: string): Promise<string | null> {
  const outcome = await runGit(["symbolic-ref", "--short", `refs/remotes/${remote}/HEAD`], { cwd: root, allowFailure: true });
  if (outcome.code !== 0) return null;
  const name = textOf(outcome).trim();
  return name.startsWith(`${remote}/`) ? name.slice(remote.length + 1) : name || null;
}
