/**
 * A session's shadow repository (docs/architecture.md, "Review and ship"): snapshots of the session's
 * folder kept in the sidecar's data directory, in a git directory and an index of their own. The
 * folder's own `.git` (its HEAD, index, branches, stash, reflog, hooks) is never read for writing nor run:
 * git is pointed at the shadow directory with GIT_DIR, at a private index with GIT_INDEX_FILE, and runs
 * with no user or system configuration (no filters, no fsmonitor, no hooks), so a snapshot is the same
 * whoever's machine it is. `.gitignore` is honoured; heavy folders and files over a bound are left out.
 */
import { existsSync } from "node:fs";
import { copyFile, lstat, mkdir, open, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { REVIEW_LIMITS } from "@agent-runtime/protocol/review";
import { fieldsOf, runGit, textOf } from "./git-run";

/** Folders a snapshot leaves out wherever they are: dependencies and build outputs, rebuilt, not reviewed. */
export const HEAVY_FOLDERS = [
  "node_modules",
  ".venv",
  "venv",
  "__pycache__",
  ".tox",
  "target",
  "dist",
  "build",
  "out",
  ".next",
  ".nuxt",
  ".svelte-kit",
  ".turbo",
  ".parcel-cache",
  ".cache",
  ".gradle",
  "coverage",
  ".terraform",
] as const;

/** The shadow repository's own configuration: nothing of the user's applies, nothing runs. */
const CONFIG = `[core]
\trepositoryformatversion = 0
\tbare = false
\tautocrlf = false
\tsafecrlf = false
\tquotePath = false
\tuntrackedCache = true
\tfsmonitor = false
\thooksPath = /dev/null
\tsymlinks = true
[gc]
\tauto = 0
[advice]
\taddEmbeddedRepo = false
\taddIgnoredFile = false
[diff]
\trenames = true
`;

/** "The folder as the private index holds it now" where a tree id is expected (ShadowRepo.stage). */
export const AT_INDEX = ":index";

/** A folder a session runs in that is too large to checkpoint (a home folder, /tmp): the session goes on without. */
export class FolderTooLarge extends Error {}

/** One entry of a diff between two snapshots, as git's raw and numstat output tell it. */
export interface TreeChange {
  path: string;
  previousPath?: string;
  status: "added" | "modified" | "deleted" | "renamed";
  binary: boolean;
  additions: number;
  deletions: number;
}

export class ShadowRepo {
  private readonly gitDir: string;
  private readonly env: Record<string, string>;

  constructor(
    /** The shadow's own folder in the data directory. */
    readonly dir: string,
    /** The session's folder: the work tree snapshotted. */
    readonly workTree: string,
    /** Folders inside the work tree never snapshotted (the sidecar's own data directory, when it is there). */
    private readonly alwaysExcluded: string[] = [],
    /** More files than this in the folder, and it is not checkpointed. */
    private readonly maxFolderFiles: number = REVIEW_LIMITS.maxFolderFiles,
  ) {
    this.gitDir = join(dir, "git");
    this.env = {
      GIT_DIR: this.gitDir,
      GIT_WORK_TREE: workTree,
      GIT_INDEX_FILE: join(dir, "index"),
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_LITERAL_PATHSPECS: "1",
      GIT_OPTIONAL_LOCKS: "0",
    };
  }

  private git(args: string[], options: { input?: string; maxOutputBytes?: number; allowFailure?: boolean; timeoutMs?: number } = {}) {
    return runGit(args, { cwd: this.workTree, env: this.env, timeoutMs: 60_000, ...options });
  }

  /** Create the git directory the first time (no `git init`: its templates would bring hooks). */
  private async ensure(): Promise<void> {
    if (existsSync(join(this.gitDir, "HEAD"))) return;
    // Snapshots hold the folder's files: only the machine's user reads them.
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await mkdir(join(this.gitDir, "objects"), { recursive: true });
    await mkdir(join(this.gitDir, "refs"), { recursive: true });
    await mkdir(join(this.gitDir, "info"), { recursive: true });
    await writeFile(join(this.gitDir, "config"), CONFIG);
    await this.writeExcludes([]);
    await writeFile(join(this.gitDir, "HEAD"), "ref: refs/heads/checkpoints\n");
  }

  /** The folder's ignore rules for snapshots: the heavy folders, then each oversize file by its exact path. */
  private async writeExcludes(oversize: string[]): Promise<void> {
    const exact = [...this.alwaysExcluded, ...oversize].map((p) => `/${p.replace(/([\\*?[\]!#\s])/g, "\\$1")}`);
    await writeFile(join(this.gitDir, "info", "exclude"), [...HEAVY_FOLDERS.map((f) => `${f}/`), ...exact, ""].join("\n"));
  }

  /**
   * Snapshot the folder as it is now: the id of its tree. Files changed since the last snapshot over
   * the bound are left out and answered in `oversize` (with those left out before that are still over it).
   */
  async snapshot(knownOversize: string[]): Promise<{ tree: string; oversize: string[] }> {
    const { oversize } = await this.stage(knownOversize);
    const tree = textOf(await this.git(["write-tree"])).trim();
    return { tree, oversize };
  }

  /**
   * The first snapshot of a folder that is the top of a linked worktree (its `.git` a file: what the
   * runtime makes for a session or an attempt) starts from that worktree's own index (docs/architecture.md, "Review and ship"): a worktree just made for a session or an attempt is
   * a clean checkout of its base, whose index already holds every file's object id and the stat data
   * git just wrote, and whose objects the shadow reads through `objects/info/alternates` (nothing is
   * copied). Only what differs from that index is hashed then, not every file. Tracked files the
   * snapshot leaves out (heavy folders, ignored) are dropped from the seeded index; tracked files over
   * the size bound stay (they are in the repository's objects already). The answer: how many files the
   * seeded index holds, or null when the folder is no checkout's top (then nothing was seeded).
   */
  private async seed(): Promise<number | null> {
    // A person's own repository (its `.git` a folder) is hashed as before: its index may hold staged blobs no commit keeps.
    if (!(await lstat(join(this.workTree, ".git")).catch(() => null))?.isFile()) return null;
    const asked = await runGit(["rev-parse", "--show-toplevel", "--git-path", "index", "--git-common-dir"], { cwd: this.workTree, allowFailure: true });
    const [top, index, common] = textOf(asked).split("\n");
    if (asked.code !== 0 || !top || !index || !common) return null;
    if ((await realpath(top)) !== (await realpath(this.workTree))) return null;
    const ownIndex = join(this.dir, "index");
    const alternates = join(this.gitDir, "objects", "info", "alternates");
    try {
      await copyFile(resolve(this.workTree, index), ownIndex);
      await mkdir(join(this.gitDir, "objects", "info"), { recursive: true });
      await writeFile(alternates, `${resolve(this.workTree, common, "objects")}\n`);
      // Read by the shadow's git (a split index, say, is not readable here: then the folder is hashed as any other).
      const excluded = fieldsOf(await this.git(["ls-files", "-z", "--cached", "--ignored", "--exclude-standard"]));
      if (excluded.length > 0)
        await this.git(["rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"], { input: `${excluded.join("\0")}\0` });
      return await indexEntries(ownIndex);
    } catch {
      await rm(ownIndex, { force: true });
      await rm(alternates, { force: true });
      return null;
    }
  }

  /**
   * Bring the private index to the folder as it is now (what a snapshot holds, without writing its tree):
   * a read of the changes up to now diffs against the index itself (AT_INDEX), one process fewer.
   */
  async stage(knownOversize: string[]): Promise<{ oversize: string[] }> {
    if (!existsSync(this.workTree)) throw new Error(`the session's folder ${this.workTree} is gone`);
    let first = !existsSync(join(this.dir, "index"));
    await this.ensure();
    const seeded = first ? await this.seed() : null;
    if (seeded !== null) {
      if (seeded > this.maxFolderFiles)
        throw new FolderTooLarge(`it has more than ${this.maxFolderFiles.toLocaleString("en")} files outside .gitignore and dependency folders`);
      first = false; // from here, as any later snapshot: only what differs from the index is weighed
    }
    // What changed since the last snapshot (by the index's stat cache): only those are weighed. The first
    // lists the whole folder: a home folder or /tmp is refused here, quickly, rather than copied.
    const listing = await this.git(
      ["ls-files", "-z", "--others", "--modified", "--deleted", "--exclude-standard"],
      first ? { timeoutMs: REVIEW_LIMITS.firstListingMs } : {},
    ).catch((err: unknown) => {
      if (first && err instanceof ProblemError && err.code === "timeout")
        throw new FolderTooLarge(`listing its files took more than ${REVIEW_LIMITS.firstListingMs / 1000} s`);
      throw err;
    });
    const candidates = [...new Set(fieldsOf(listing))];
    if ((first || seeded !== null) && candidates.length + (seeded ?? 0) > this.maxFolderFiles)
      throw new FolderTooLarge(`it has more than ${this.maxFolderFiles.toLocaleString("en")} files outside .gitignore and dependency folders`);
    const oversize = new Set<string>();
    for (const path of [...new Set([...candidates, ...knownOversize])]) {
      const info = await lstat(join(this.workTree, path)).catch(() => null);
      if (info?.isFile() && info.size > REVIEW_LIMITS.maxFileBytes) oversize.add(path);
    }
    const over = [...oversize].sort();
    if (over.join("\0") !== [...knownOversize].sort().join("\0")) {
      await this.writeExcludes(over);
      // A file that grew past the bound leaves the snapshot (not the disk).
      if (over.length > 0)
        await this.git(["rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"], { input: `${over.join("\0")}\0` });
    }
    // Only what the listing named is hashed (one scan of the folder per snapshot, not two); a file that
    // vanished since is removed. Should that fail (a file unreadable), `add -A` does the whole folder.
    const update = candidates.filter((p) => !oversize.has(p));
    if (first)
      await this.git(["add", "-A", "--ignore-errors"], { allowFailure: true }); // the whole folder: git's own walk is faster
    else if (update.length > 0) {
      const updated = await this.git(["update-index", "--add", "--remove", "-z", "--stdin"], { input: `${update.join("\0")}\0`, allowFailure: true });
      if (updated.code !== 0) await this.git(["add", "-A", "--ignore-errors"], { allowFailure: true });
    }
    return { oversize: over };
  }

  /** What changed from tree `from` to tree `to`, every file, with line counts (binary files have none). */
  async changesBetween(from: string, to: string, renames = true): Promise<TreeChange[]> {
    const options = ["-r", "-z", renames ? "-M" : "--no-renames", "--raw", "--numstat"];
    // diff-index prints what diff-tree does, for a tree against the index.
    const args = to === AT_INDEX ? ["diff-index", "--cached", ...options, from] : ["diff-tree", ...options, from, to];
    const fields = fieldsOf(await this.git(args));
    const changes: TreeChange[] = [];
    let i = 0;
    while (i < fields.length && fields[i]!.startsWith(":")) {
      const letter = fields[i]!.split(" ")[4]?.[0] ?? "M";
      const paired = letter === "R" || letter === "C";
      const first = fields[i + 1]!;
      const second = paired ? fields[i + 2]! : undefined;
      i += paired ? 3 : 2;
      const status = letter === "A" || letter === "C" ? "added" : letter === "D" ? "deleted" : letter === "R" ? "renamed" : "modified";
      changes.push({
        path: second ?? first,
        ...(letter === "R" ? { previousPath: first } : {}),
        status,
        binary: false,
        additions: 0,
        deletions: 0,
      });
    }
    // Then one numstat entry per change, in the same order: "added\tdeleted\tpath", or for a pair "added\tdeleted\t" and both paths.
    for (const change of changes) {
      const head = fields[i] ?? "";
      const [added = "0", deleted = "0", path = ""] = head.split("\t");
      i += path === "" ? 3 : 1;
      change.binary = added === "-";
      change.additions = change.binary ? 0 : Number(added) || 0;
      change.deletions = change.binary ? 0 : Number(deleted) || 0;
    }
    return changes;
  }

  /** The unified diff of some paths between two trees, up to `maxBytes` (and how large it was). */
  async diffText(from: string, to: string, paths: string[], maxBytes: number): Promise<{ text: string; bytes: number; truncated: boolean }> {
    const range = to === AT_INDEX ? ["--cached", from] : [from, to];
    const outcome = await this.git(["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", ...range, "--", ...paths], { maxOutputBytes: maxBytes });
    return { text: textOf(outcome), bytes: outcome.totalBytes, truncated: outcome.truncated };
  }

  /** Of `paths`, those whose content differs between two trees. */
  async differing(from: string, to: string, paths: string[]): Promise<string[]> {
    if (paths.length === 0) return [];
    const wanted = new Set(paths);
    return fieldsOf(await this.git(["diff-tree", "-r", "-z", "--no-renames", "--name-only", from, to])).filter((p) => wanted.has(p));
  }

  /** Put `paths` back in the folder as tree `tree` has them (the private index follows). */
  async restore(tree: string, paths: string[]): Promise<void> {
    if (paths.length === 0) return;
    await this.git(["checkout", tree, "--pathspec-from-file=-", "--pathspec-file-nul"], { input: `${paths.join("\0")}\0` });
  }

  /** Heavy folders at the top of the session's folder: left out of every snapshot, listed as such. */
  async heavyFoldersPresent(): Promise<string[]> {
    const names = new Set<string>(HEAVY_FOLDERS);
    const entries = await readdir(this.workTree, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory() && names.has(e.name)).map((e) => `${e.name}/`);
  }

  /** Remove the shadow repository (the session's folder is not touched). */
  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The number of entries an index file holds (its header: "DIRC", version, count; all big-endian). */
async function indexEntries(path: string): Promise<number> {
  const file = await open(path, "r");
  try {
    const header = Buffer.alloc(12);
    await file.read(header, 0, 12, 0);
    if (header.toString("latin1", 0, 4) !== "DIRC") throw new Error(`${path} is not a git index`);
    return header.readUInt32BE(8);
  } finally {
    await file.close();
  }
}
