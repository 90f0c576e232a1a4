/**
 * The git of attempt groups (docs/architecture.md, "Attempt groups"), run with the machine's own git as
 * its user (git-run.ts: no prompt, a deadline, bounded output, git's words on a refusal): the base agreed,
 * an attempt's work committed on its branch and counted, two refs diffed, a branch merged into the base.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AttemptChanges } from "@agent-runtime/protocol/attempts";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { repositoryOf } from "../review/git-actions";
import { fieldsOf, gitProblem, runGit, textOf } from "../review/git-run";

/** A unified diff is answered up to this many bytes, then cut (and said to be). */
const MAX_DIFF_BYTES = 512 * 1024;

/** Who commits when the repository names nobody: the runtime, plainly (a person's identity is never made up). */
async function identity(cwd: string): Promise<Record<string, string>> {
  const email = await runGit(["config", "user.email"], { cwd, allowFailure: true });
  if (email.code === 0 && textOf(email).trim()) return {};
  const who = { name: "agent-runtime", email: "agent-runtime@localhost" };
  return { GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_COMMITTER_NAME: who.name, GIT_COMMITTER_EMAIL: who.email };
}

async function commitOf(cwd: string, ref: string): Promise<string | null> {
  const outcome = await runGit(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], { cwd, allowFailure: true });
  return outcome.code === 0 ? textOf(outcome).trim() : null;
}

async function isBranch(cwd: string, name: string): Promise<boolean> {
  return (await runGit(["show-ref", "--verify", "--quiet", `refs/heads/${name}`], { cwd, allowFailure: true })).code === 0;
}

/**
 * What `base` names here (default: the current branch): its commit, and the branch a pick merges into
 * (null for a bare commit). With `commit`, the first machine's answer: this machine must hold that commit.
 */
export async function resolveBase(request: { cwd: string; base?: string | undefined; commit?: string | undefined }) {
  const repository = await repositoryOf(request.cwd);
  const current = textOf(await runGit(["branch", "--show-current"], { cwd: repository })).trim() || null;
  const named = request.base ?? current;
  const branch = named !== null && (await isBranch(repository, named)) ? named : null;
  if (request.commit) {
    const held = await commitOf(repository, request.commit);
    if (held === null)
      throw new ProblemError(
        "conflict",
        `this machine's repository ${repository} does not hold commit ${request.commit}, the base the group agreed on: fetch it there (git fetch), or name a base every machine holds`,
        { commit: request.commit, repository },
      );
    return { repository, branch, commit: held };
  }
  const commit = await commitOf(repository, named ?? "HEAD");
  if (commit === null) throw new ProblemError("git_failed", `'${named ?? "HEAD"}' names no commit in ${repository}`);
  return { repository, branch, commit };
}

/** Counts of `git diff --numstat -z from to` (a binary file counts as a file, with no lines). */
function countNumstat(fields: string[]): AttemptChanges {
  const changes = { files: 0, added: 0, removed: 0 };
  for (const field of fields) {
    const [added = "-", removed = "-"] = field.split("\t");
    changes.files += 1;
    changes.added += Number(added) || 0;
    changes.removed += Number(removed) || 0;
  }
  return changes;
}

/**
 * Commit what the agent left in its worktree on the attempt's branch (hooks skipped: the group's check is
 * its verification) and count the branch against the base.
 */
export async function settle(request: { cwd: string; base: string; message: string }): Promise<{ commit: string | null; changes: AttemptChanges }> {
  const root = await repositoryOf(request.cwd);
  await runGit(["add", "-A"], { cwd: root, timeoutMs: 120_000 });
  const staged = await runGit(["diff", "--cached", "--quiet"], { cwd: root, allowFailure: true });
  let commit: string | null = null;
  if (staged.code !== 0) {
    await runGit(["commit", "-q", "--no-verify", "-F", "-"], { cwd: root, input: request.message, env: await identity(root), timeoutMs: 60_000 });
    commit = await commitOf(root, "HEAD");
  }
  const numstat = fieldsOf(await runGit(["diff", "--numstat", "-z", "--no-renames", request.base, "HEAD"], { cwd: root }));
  return { commit, changes: countNumstat(numstat) };
}

/** `to` against `from`: each file's status and counts, and git's unified diff up to MAX_DIFF_BYTES. */
export async function diffRefs(request: { cwd: string; from: string; to: string }) {
  const repository = await repositoryOf(request.cwd);
  for (const ref of [request.from, request.to])
    if ((await commitOf(repository, ref)) === null) throw new ProblemError("not_found", `'${ref}' names no commit in ${repository} (discarded?)`);
  const range = [request.from, request.to];
  const statuses = fieldsOf(await runGit(["diff", "--name-status", "-z", "--no-renames", ...range], { cwd: repository }));
  const counts = new Map<string, [number | null, number | null]>();
  for (const field of fieldsOf(await runGit(["diff", "--numstat", "-z", "--no-renames", ...range], { cwd: repository }))) {
    const [added = "-", removed = "-", ...path] = field.split("\t");
    counts.set(path.join("\t"), [added === "-" ? null : Number(added), removed === "-" ? null : Number(removed)]);
  }
  const files = [];
  for (let i = 0; i + 1 < statuses.length; i += 2) {
    const path = statuses[i + 1]!;
    const [added, removed] = counts.get(path) ?? [null, null];
    files.push({ path, status: statuses[i]!, added, removed });
  }
  const unified = await runGit(["diff", "--no-color", "--no-renames", ...range], { cwd: repository, maxOutputBytes: MAX_DIFF_BYTES });
  return { files, diff: textOf(unified), truncated: unified.truncated };
}

/** The folder where `branch` is checked out, if any (the repository itself, or one of its worktrees). */
async function checkedOutAt(repository: string, branch: string): Promise<string | null> {
  const fields = fieldsOf(await runGit(["worktree", "list", "--porcelain", "-z"], { cwd: repository }));
  let path: string | null = null;
  for (const field of fields) {
    if (field.startsWith("worktree ")) path = field.slice(9);
    else if (field === `branch refs/heads/${branch}`) return path;
  }
  return null;
}

/**
 * Merge `branch` into `into`: where `into` is checked out, there (git refuses what would overwrite a
 * person's uncommitted changes, in its words); otherwise a fast-forward moves the ref, and a merge commit
 * is made in a worktree of the runtime's own, removed after. A conflict is aborted and refused: nothing
 * is left half-merged.
 */
export async function mergeInto(request: { cwd: string; branch: string; into: string; message: string }, scratchRoot: string) {
  const repository = await repositoryOf(request.cwd);
  if (!(await isBranch(repository, request.into))) throw new ProblemError("conflict", `'${request.into}' is not a branch of ${repository}`);
  const tip = await commitOf(repository, request.branch);
  if (tip === null) throw new ProblemError("not_found", `no branch '${request.branch}' in ${repository} (discarded?)`);
  const before = (await commitOf(repository, request.into))!;
  const fastForward = (await runGit(["merge-base", "--is-ancestor", before, tip], { cwd: repository, allowFailure: true })).code === 0;
  const at = await checkedOutAt(repository, request.into);
  if (at === null && fastForward) {
    await runGit(["update-ref", "-m", `merge ${request.branch}: fast-forward`, `refs/heads/${request.into}`, tip, before], { cwd: repository });
    return { how: "fast-forward" as const, commit: tip };
  }
  const scratch = at === null ? join(resolve(scratchRoot), `.merge-${randomBytes(4).toString("hex")}`) : null;
  if (scratch) await runGit(["worktree", "add", "-q", scratch, request.into], { cwd: repository, timeoutMs: 120_000 });
  const where = at ?? scratch!;
  try {
    const merged = await runGit(["merge", "--no-edit", "-m", request.message, request.branch], {
      cwd: where,
      env: await identity(where),
      allowFailure: true,
      timeoutMs: 120_000,
    });
    if (merged.code !== 0) {
      const said = [textOf(merged), merged.stderr].join("\n").trim();
      await runGit(["merge", "--abort"], { cwd: where, allowFailure: true });
      throw gitProblem(["merge"], said);
    }
  } finally {
    if (scratch && existsSync(scratch)) await runGit(["worktree", "remove", "--force", scratch], { cwd: repository, allowFailure: true });
  }
  return { how: fastForward ? ("fast-forward" as const) : ("merge commit" as const), commit: (await commitOf(repository, request.into))! };
}

/** Delete an attempt's branch (only an attempt's: agent/grp-…); false when it was gone already. */
export async function deleteBranch(cwd: string, branch: string): Promise<boolean> {
  if (!/^agent\/grp-[0-9a-f]{12}-\d+-/.test(branch)) throw new ProblemError("permission_denied", `'${branch}' is not an attempt's branch`);
  const repository = await repositoryOf(cwd);
  if (!(await isBranch(repository, branch))) return false;
  await runGit(["branch", "-D", branch], { cwd: repository });
  return true;
}
