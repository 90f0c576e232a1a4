/**
 * The first snapshot of a linked worktree, seeded from the worktree's own index (shadow-repo.ts), on real
 * git: it is the same tree as hashing every file would give (the worktree's tracked files, less what the
 * snapshot leaves out, plus what is untracked or changed), its objects come from the repository without
 * being copied, and later snapshots see every change. A person's own repository (its `.git` a folder) is
 * hashed as before.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShadowRepo } from "./shadow-repo";

let root: string;
let repo: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@e", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@e" },
  });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "shadow-seed-"));
  repo = join(root, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  git(root, "init", "-q", "-b", "main", repo);
  for (let i = 0; i < 50; i++) writeFileSync(join(repo, "src", `f${i}.ts`), `export const v = ${i};\n`);
  // Tracked, yet never in a snapshot: a dependency folder, and a file the repository now ignores.
  mkdirSync(join(repo, "node_modules", "dep"), { recursive: true });
  writeFileSync(join(repo, "node_modules", "dep", "index.js"), "module.exports = 1;\n");
  writeFileSync(join(repo, "generated.log"), "old output\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "start");
  writeFileSync(join(repo, ".gitignore"), "*.log\n");
  git(repo, "add", ".gitignore");
  git(repo, "commit", "-q", "-m", "ignore logs");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The tree a snapshot of `folder` gives when every file is hashed (a copy that is no checkout). */
async function hashedTree(folder: string, name: string): Promise<string> {
  const copy = join(root, `${name}-copy`);
  execFileSync("cp", ["-r", folder, copy]);
  rmSync(join(copy, ".git"), { recursive: true, force: true });
  return (await new ShadowRepo(join(root, `${name}-copy-shadow`), copy).snapshot([])).tree;
}

describe("a worktree's first snapshot", () => {
  it("is seeded from its index: the same tree as hashing every file, its objects read from the repository, not copied", async () => {
    const worktree = join(root, "wt");
    git(repo, "worktree", "add", "-q", "-b", "agent/seeded", worktree, "main");
    // Changed before the first snapshot: one file edited, one added, one deleted.
    writeFileSync(join(worktree, "src", "f1.ts"), "export const v = 'edited';\n");
    writeFileSync(join(worktree, "src", "new.ts"), "export const added = true;\n");
    rmSync(join(worktree, "src", "f2.ts"));
    const dir = join(root, "wt-shadow");
    const shadow = new ShadowRepo(dir, worktree);
    const { tree } = await shadow.snapshot([]);
    expect(tree).toBe(await hashedTree(worktree, "wt"));
    const listed = execFileSync("git", ["ls-tree", "-r", "--name-only", tree], { env: { ...process.env, GIT_DIR: join(dir, "git") }, encoding: "utf8" });
    expect(listed).toContain("src/new.ts");
    expect(listed).not.toContain("src/f2.ts");
    expect(listed).not.toContain("node_modules");
    expect(listed).not.toContain("generated.log");
    // Seeded: the repository's objects through alternates; only the two new blobs (and the trees) are the shadow's own.
    expect(readFileSync(join(dir, "git", "objects", "info", "alternates"), "utf8").trim()).toBe(join(repo, ".git", "objects"));
    const own = readdirSync(join(dir, "git", "objects")).filter((d) => /^[0-9a-f]{2}$/.test(d));
    const blobs = own.flatMap((d) => readdirSync(join(dir, "git", "objects", d)).map((f) => d + f));
    const types = blobs.map((id) =>
      execFileSync("git", ["cat-file", "-t", id], { env: { ...process.env, GIT_DIR: join(dir, "git") }, encoding: "utf8" }).trim(),
    );
    expect(types.filter((t) => t === "blob")).toHaveLength(2);

    // Later changes are seen as in any snapshot.
    writeFileSync(join(worktree, "src", "f3.ts"), "export const v = 'later';\n");
    const later = await shadow.snapshot([]);
    const changes = await shadow.changesBetween(tree, later.tree);
    expect(changes.map((c) => [c.path, c.status])).toEqual([["src/f3.ts", "modified"]]);
  });

  it("of a person's own repository (its .git a folder) hashes every file, with no alternates", async () => {
    const dir = join(root, "repo-shadow");
    const { tree } = await new ShadowRepo(dir, repo).snapshot([]);
    expect(tree).toBe(await hashedTree(repo, "repo"));
    expect(existsSync(join(dir, "git", "objects", "info", "alternates"))).toBe(false);
  });
});
