/**
 * The git of attempt groups against real repositories: a base resolved to its commit and branch, refused
 * on a machine that lacks the agreed commit; a merge that conflicts refused in git's words and aborted.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { mergeInto, resolveBase } from "./attempt-git";

const root = mkdtempSync(join(tmpdir(), "attempt-git-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function repository(name: string): { path: string; git: (...args: string[]) => string } {
  const path = join(root, name);
  execFileSync("git", ["init", "-q", "-b", "main", path]);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: path, encoding: "utf8" });
  git("config", "user.name", "T");
  git("config", "user.email", "t@example.com");
  writeFileSync(join(path, "a.txt"), "one\n");
  git("add", ".");
  git("commit", "-q", "-m", `start of ${name}`);
  return { path, git };
}

describe("attempt git", () => {
  it("agrees a base, and refuses a machine that lacks its commit", async () => {
    const first = repository("first");
    const other = repository("other");
    const base = await resolveBase({ cwd: first.path });
    expect(base).toEqual({ repository: first.path, branch: "main", commit: first.git("rev-parse", "HEAD").trim() });
    const refused = await resolveBase({ cwd: other.path, base: "main", commit: base.commit }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProblemError);
    expect((refused as ProblemError).code).toBe("conflict");
    expect((refused as ProblemError).message).toContain(`does not hold commit ${base.commit}`);
    // Once fetched, the same commit is held.
    other.git("fetch", "-q", first.path, "main");
    expect((await resolveBase({ cwd: other.path, base: "main", commit: base.commit })).commit).toBe(base.commit);
  });

  it("refuses a conflicting merge in git's words, leaving the base as it was", async () => {
    const repo = repository("conflict");
    repo.git("checkout", "-q", "-b", "agent/grp-0123456789ab-1-mock");
    writeFileSync(join(repo.path, "a.txt"), "attempt\n");
    repo.git("commit", "-q", "-am", "attempt");
    repo.git("checkout", "-q", "main");
    writeFileSync(join(repo.path, "a.txt"), "meanwhile\n");
    repo.git("commit", "-q", "-am", "meanwhile");
    const before = repo.git("rev-parse", "main").trim();
    const refused = await mergeInto({ cwd: repo.path, branch: "agent/grp-0123456789ab-1-mock", into: "main", message: "pick" }, join(root, "scratch")).catch(
      (e: unknown) => e,
    );
    expect((refused as ProblemError).code).toBe("git_failed");
    expect((refused as ProblemError).message).toContain("CONFLICT");
    expect(repo.git("rev-parse", "main").trim()).toBe(before);
    expect(repo.git("status", "--porcelain").trim()).toBe("");
  });
});
