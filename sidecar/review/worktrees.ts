/**
 * Worktrees for parallel agents (docs/architecture.md, "Review and ship"): a session that asks for one
 * runs in a git worktree of its repository, on a new branch `agent/<slug>-<short id>` from HEAD or a
 * named base, kept in the sidecar's data directory. What the runtime made is remembered beside each
 * worktree (its base and the session using it), so a list can say "ahead of main by N".
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { basename, join, relative, resolve, sep } from "node:path";
import { z } from "zod";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { SessionWorktree, Worktree, WorktreeRequest } from "@agent-runtime/protocol/review";
import { writeFileAtomic } from "../atomic-file";
import { repositoryOf } from "./git-actions";
import { fieldsOf, runGit, textOf } from "./git-run";

const Remembered = z.object({ repository: z.string(), path: z.string(), branch: z.string(), base: z.string(), sessionId: z.string().nullable() });

/** "Fix the login page!" → "fix-the-login-page" (at most 32 characters; "session" when nothing is left). */
export function slugOf(words: string | undefined): string {
  const slug = (words ?? "")
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 32)
    .replace(/-+$/, "");
  return slug || "session";
}

export class Worktrees {
  private readonly root: string;

  constructor(dataDir: string) {
    this.root = resolve(dataDir, "worktrees"); // absolute: git runs in the repository, not here
  }

  private metaFile(path: string): string {
    return `${path}.json`;
  }

  private remembered(path: string): z.infer<typeof Remembered> | null {
    try {
      return Remembered.parse(JSON.parse(readFileSync(this.metaFile(path), "utf8")));
    } catch {
      return null;
    }
  }

  /**
   * A worktree for a session starting in `cwd`: the folder the session runs in (the same place inside the
   * repository as `cwd` was), and what the record keeps of it.
   */
  async create(cwd: string, request: WorktreeRequest): Promise<{ cwd: string; worktree: SessionWorktree }> {
    const repository = await repositoryOf(cwd);
    const base = request.base ?? "HEAD";
    const baseCommit = await runGit(["rev-parse", "--verify", "--quiet", `${base}^{commit}`], { cwd: repository, allowFailure: true });
    if (baseCommit.code !== 0)
      throw new ProblemError("git_failed", `'${base}' names no commit in ${repository}${base === "HEAD" ? " (it has no commit yet)" : ""}`);
    // An exact branch (an attempt's) is its own name; otherwise words and a short id keep names apart.
    const name = request.branch ? request.branch.slice("agent/".length) : `${slugOf(request.name)}-${randomBytes(3).toString("hex")}`;
    const branch = `agent/${name}`;
    const repoKey = `${basename(repository)}-${createHash("sha256").update(repository).digest("hex").slice(0, 8)}`;
    const path = join(this.root, repoKey, name);
    // The checkout is the per-file cost of a new worktree (docs/architecture.md, "Attempt groups"): git's
    // parallel checkout (a worker per core) writes the files; its first checkpoint reads this index (shadow-repo.ts).
    const add = ["-c", "checkout.workers=0", "worktree", "add", "-q", "-b", branch, path, textOf(baseCommit).trim()];
    await runGit(add, { cwd: repository, timeoutMs: 120_000 });
    const namedBase =
      base === "HEAD" ? textOf(await runGit(["branch", "--show-current"], { cwd: repository })).trim() || textOf(baseCommit).trim().slice(0, 12) : base;
    const worktree = { repository, path, branch, base: namedBase };
    await writeFileAtomic(this.metaFile(path), JSON.stringify({ ...worktree, sessionId: null }));
    const inside = relative(repository, resolve(cwd));
    return { cwd: inside && !inside.startsWith("..") ? join(path, inside) : path, worktree };
  }

  /** The session a worktree was made for (known once the agent answered `session/new`). */
  async usedBy(path: string, sessionId: string): Promise<void> {
    const known = this.remembered(path);
    if (known) await writeFileAtomic(this.metaFile(path), JSON.stringify({ ...known, sessionId }));
  }

  async list(cwd: string): Promise<{ repository: string; worktrees: Worktree[] }> {
    const repository = await repositoryOf(cwd);
    const fields = fieldsOf(await runGit(["worktree", "list", "--porcelain", "-z"], { cwd: repository }));
    const worktrees: Worktree[] = [];
    let current: Worktree | null = null;
    for (const field of [...fields, ""]) {
      if (field === "") {
        if (current) worktrees.push(current);
        current = null;
      } else if (field.startsWith("worktree ")) {
        const path = field.slice(9);
        current = { path, branch: null, head: null, base: null, ahead: null, behind: null, main: worktrees.length === 0, session: null };
      } else if (current && field.startsWith("HEAD ")) current.head = field.slice(5);
      else if (current && field.startsWith("branch ")) current.branch = field.slice(7).replace(/^refs\/heads\//, "");
    }
    for (const tree of worktrees) {
      const known = this.remembered(tree.path);
      if (!known) continue;
      tree.base = known.base;
      tree.session = known.sessionId;
      if (!tree.branch) continue;
      const counted = await runGit(["rev-list", "--left-right", "--count", `${known.base}...${tree.branch}`], { cwd: repository, allowFailure: true });
      const [behind, ahead] = textOf(counted).trim().split(/\s+/).map(Number);
      if (counted.code === 0) Object.assign(tree, { ahead: ahead ?? 0, behind: behind ?? 0 });
    }
    return { repository, worktrees };
  }

  /** Remove a worktree (its branch stays: its commits are someone's work). Refused with uncommitted changes unless forced. */
  async remove(path: string, force: boolean): Promise<boolean> {
    const target = resolve(path);
    // Only what the runtime made: a person's own worktrees are theirs to remove, on the machine.
    if (!target.startsWith(this.root + sep))
      throw new ProblemError(
        "permission_denied",
        `'${path}' is not a worktree a session made (those are under ${this.root}): remove it on the machine with git worktree remove`,
      );
    if (!existsSync(target)) return false;
    const repository = await repositoryOf(target);
    if (repository !== target) throw new ProblemError("invalid_request", `'${path}' is not a worktree's top folder (${repository} is)`);
    // The repository's own .git (git prints it relative to the folder it ran in).
    const main = resolve(target, textOf(await runGit(["rev-parse", "--git-common-dir"], { cwd: target })).trim());
    if (resolve(main, "..") === target) throw new ProblemError("conflict", `'${path}' is the repository's own folder, not a worktree`);
    if (!force) {
      const dirty = textOf(await runGit(["status", "--porcelain", "-z"], { cwd: target })).length > 0;
      if (dirty) throw new ProblemError("conflict", `the worktree '${path}' has uncommitted changes: commit them, or remove it with force=true`);
    }
    await runGit(["worktree", "remove", ...(force ? ["--force"] : []), target], { cwd: resolve(main, ".."), timeoutMs: 60_000 });
    await rm(this.metaFile(target), { force: true });
    return true;
  }
}
