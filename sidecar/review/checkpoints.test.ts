/**
 * Checkpoints on real git in temporary folders: turns' and the session's changes are exact, a turn's
 * revert restores it and refuses over later edits, folders that are not repositories work, heavy folders
 * and oversize or binary files are listed and not diffed, and the user's repository is untouched.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { REVIEW_LIMITS } from "@agent-runtime/protocol/review";
import { Checkpoints } from "./checkpoints";

let dir: string;
let folder: string;
let checkpoints: Checkpoints;
const key = { agent: "mock", sessionId: "s-1" };

function git(...args: string[]): string {
  return execFileSync("git", args, {
    cwd: folder,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@e", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@e" },
  });
}

/** Every file of a folder and its bytes' hash: a `.git` compared before and after, byte for byte. */
function fingerprint(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[relative(root, p)] = createHash("sha256").update(readFileSync(p)).digest("hex") + statSync(p).mtimeMs;
    }
  };
  walk(root);
  return out;
}

const write = (path: string, text: string) => {
  mkdirSync(join(folder, path, ".."), { recursive: true });
  writeFileSync(join(folder, path), text);
};

/** One turn: the checkpoint before, the agent's edits, the checkpoint after. */
async function turn(edit: () => void) {
  await checkpoints.turnStarting(key);
  edit();
  return checkpoints.turnEnded(key);
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "checkpoints-"));
  folder = join(dir, "project");
  mkdirSync(folder);
  checkpoints = new Checkpoints(join(dir, "data"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("in a git repository", () => {
  beforeEach(async () => {
    git("init", "-q", "-b", "main");
    write("a.txt", "one\ntwo\nthree\n");
    write("b.txt", "bee\n");
    write(".gitignore", "secret.env\n");
    git("add", ".");
    git("commit", "-q", "-m", "first");
    write("staged.txt", "staged\n");
    git("add", "staged.txt");
    write("stashed.txt", "x\n");
    git("stash", "push", "-q", "--include-untracked", "--", "stashed.txt");
    await checkpoints.sessionOpened(key, folder);
  });

  it("tells each turn's changes and the session's exactly, and leaves the repository byte for byte as it was", async () => {
    const before = fingerprint(join(folder, ".git"));
    const first = await turn(() => {
      write("a.txt", "one\n2\nthree\nfour\n");
      write("new/c.txt", "sea\n");
      write("secret.env", "KEY=1\n");
    });
    expect(first).toEqual({ turn: 1, files: 2, additions: 3, deletions: 1 });
    const second = await turn(() => {
      rmSync(join(folder, "b.txt"));
      write("new/c.txt", "sea\nsee\n");
    });
    expect(second).toEqual({ turn: 2, files: 2, additions: 1, deletions: 1 });

    const one = await checkpoints.changes(key, folder, 1);
    expect(one.files).toEqual([
      { path: "a.txt", status: "modified", additions: 2, deletions: 1 },
      { path: "new/c.txt", status: "added", additions: 1, deletions: 0 },
    ]);
    const whole = await checkpoints.changes(key, folder);
    expect(whole.turn).toBeNull();
    expect(whole.turns).toBe(2);
    expect(whole.files).toEqual([
      { path: "a.txt", status: "modified", additions: 2, deletions: 1 },
      { path: "b.txt", status: "deleted", additions: 0, deletions: 1 },
      { path: "new/c.txt", status: "added", additions: 2, deletions: 0 },
    ]);
    expect(whole.totals).toEqual({ files: 3, additions: 4, deletions: 2 });

    const diff = await checkpoints.diff(key, folder, "a.txt", 1);
    expect(diff.diff).toContain("-two\n+2\n three\n+four\n");
    expect(diff.tooLarge).toBe(false);

    expect(fingerprint(join(folder, ".git"))).toEqual(before);
    expect(git("status", "--porcelain")).toContain("A  staged.txt");
    expect(git("stash", "list")).toContain("stash@{0}");
  });

  it("reverts a turn, and refuses (409, naming the files) when one of them changed since, unless forced", async () => {
    await turn(() => write("a.txt", "turn one\n"));
    await turn(() => {
      write("a.txt", "turn two\n");
      write("added.txt", "new\n");
      rmSync(join(folder, "b.txt"));
    });
    const reverted = await checkpoints.revert(key, folder, 2, false);
    expect(reverted).toEqual({ turn: 2, restored: ["a.txt", "b.txt"], removed: ["added.txt"] });
    expect(readFileSync(join(folder, "a.txt"), "utf8")).toBe("turn one\n");
    expect(readFileSync(join(folder, "b.txt"), "utf8")).toBe("bee\n");
    expect(existsSync(join(folder, "added.txt"))).toBe(false);

    write("a.txt", "a person's edit\n");
    const refused = await checkpoints.revert(key, folder, 1, false).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProblemError);
    expect((refused as ProblemError).code).toBe("conflict");
    expect((refused as ProblemError).extensions?.files).toEqual(["a.txt"]);
    expect(readFileSync(join(folder, "a.txt"), "utf8")).toBe("a person's edit\n");
    await checkpoints.revert(key, folder, 1, true);
    expect(readFileSync(join(folder, "a.txt"), "utf8")).toBe("one\ntwo\nthree\n");
  });

  it("never reverts through a link out of the folder: a file a turn added, or one it changed", async () => {
    write("keep/x.txt", "before the turn\n");
    await turn(() => {
      write("sub/new.txt", "added by the turn\n");
      write("keep/x.txt", "changed by the turn\n");
    });
    // Then both folders become links to folders outside, holding files of the same names.
    const outside = join(dir, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "new.txt"), "someone else's\n");
    writeFileSync(join(outside, "x.txt"), "someone else's too\n");
    rmSync(join(folder, "sub"), { recursive: true });
    rmSync(join(folder, "keep"), { recursive: true });
    symlinkSync(outside, join(folder, "sub"));
    symlinkSync(outside, join(folder, "keep"));
    const refused = await checkpoints.revert(key, folder, 1, true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProblemError);
    expect((refused as ProblemError).code).toBe("conflict");
    expect((refused as ProblemError).extensions?.files).toEqual(["keep/x.txt", "sub/new.txt"]);
    expect(readFileSync(join(outside, "new.txt"), "utf8")).toBe("someone else's\n");
    expect(readFileSync(join(outside, "x.txt"), "utf8")).toBe("someone else's too\n");
    // A link that stays inside the folder is no escape: reverting through it is allowed.
    rmSync(join(folder, "sub"));
    rmSync(join(folder, "keep"));
    mkdirSync(join(folder, "real"));
    writeFileSync(join(folder, "real", "new.txt"), "added by the turn\n");
    symlinkSync(join(folder, "real"), join(folder, "sub"));
    mkdirSync(join(folder, "keep"));
    await checkpoints.revert(key, folder, 1, true);
    expect(existsSync(join(folder, "real", "new.txt"))).toBe(false);
    expect(readFileSync(join(folder, "keep", "x.txt"), "utf8")).toBe("before the turn\n");
  });

  it("lists binary and oversize files without diffing them, and names no path outside the folder", async () => {
    await turn(() => {
      writeFileSync(join(folder, "image.bin"), Buffer.from([0, 1, 2, 0, 255]));
      writeFileSync(join(folder, "huge.log"), Buffer.alloc(REVIEW_LIMITS.maxFileBytes + 1, 97));
    });
    const changes = await checkpoints.changes(key, folder, 1);
    expect(changes.files).toEqual([
      { path: "image.bin", status: "binary", additions: 0, deletions: 0 },
      { path: "huge.log", status: "excluded", additions: 0, deletions: 0, reason: `larger than ${REVIEW_LIMITS.maxFileBytes} bytes` },
    ]);
    expect((await checkpoints.diff(key, folder, "image.bin", 1)).diff).toBeNull();
    expect((await checkpoints.diff(key, folder, "huge.log", 1)).status).toBe("excluded");
    const outside = await checkpoints.diff(key, folder, "../outside.txt", 1).catch((e: unknown) => e);
    expect((outside as ProblemError).code).toBe("not_found");
  });
});

it("works in a folder that is not a repository, and leaves heavy folders out, listed", async () => {
  await checkpoints.sessionOpened(key, folder);
  write("src/app.js", "let a = 1;\n");
  for (let i = 0; i < 200; i++) write(`node_modules/dep${i}/index.js`, `module.exports = ${i};\n`);
  const summary = await turn(() => {
    write("src/app.js", "let a = 2;\n");
    write("node_modules/dep1/index.js", "changed\n");
  });
  expect(summary).toEqual({ turn: 1, files: 1, additions: 1, deletions: 1 });
  const whole = await checkpoints.changes(key, folder);
  expect(whole.files).toEqual([
    { path: "src/app.js", status: "modified", additions: 1, deletions: 1 },
    { path: "node_modules/", status: "excluded", additions: 0, deletions: 0, reason: "a dependency or build folder" },
  ]);
  expect(existsSync(join(folder, ".git"))).toBe(false);
  // Snapshots hold the folder's files: no one but the machine's user reads them.
  expect(statSync(join(dir, "data", "checkpoints")).mode & 0o077).toBe(0);
});

it("answers no changes for a session never prompted, a 404 for a turn it never had, and forgets a dropped session", async () => {
  await checkpoints.sessionOpened(key, folder);
  expect((await checkpoints.changes(key, folder)).files).toEqual([]);
  const missing = await checkpoints.changes(key, folder, 3).catch((e: unknown) => e);
  expect((missing as ProblemError).code).toBe("not_found");
  await turn(() => write("x.txt", "x\n"));
  expect(await checkpoints.drop(key)).toBe(true);
  expect((await checkpoints.changes(key, folder)).turns).toBe(0);
});

it("never snapshots the sidecar's own data folder inside the session's folder, and leaves a folder over the bound alone", async () => {
  const inside = new Checkpoints(join(folder, ".agent-runtime"), 50);
  await inside.sessionOpened(key, folder);
  await inside.turnStarting(key);
  write("a.txt", "a\n");
  expect(await inside.turnEnded(key)).toEqual({ turn: 1, files: 1, additions: 1, deletions: 0 });
  expect((await inside.changes(key, folder)).files.map((f) => f.path)).toEqual(["a.txt"]);

  const big = join(dir, "big");
  for (let i = 0; i < 60; i++) {
    mkdirSync(big, { recursive: true });
    writeFileSync(join(big, `f${i}.txt`), `${i}\n`);
  }
  const other = { agent: "mock", sessionId: "big" };
  await inside.sessionOpened(other, big);
  expect(await inside.turnStarting(other)).toBeNull();
  expect(await inside.turnEnded(other)).toBeNull();
  const changes = await inside.changes(other, big);
  expect(changes.turns).toBe(0);
  expect(changes.unavailable).toMatch(/more than 50 files/);

  const temporary = { agent: "mock", sessionId: "tmp" };
  await inside.sessionOpened(temporary, tmpdir());
  expect(await inside.turnStarting(temporary)).toBeNull();
  expect((await inside.changes(temporary, tmpdir())).unavailable).toMatch(/root, home or temporary folder/);
});
