import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { commentOnIssue } from "./gh";

const dirs: string[] = [];
const realPath = process.env.PATH;
afterEach(() => {
  process.env.PATH = realPath;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A `gh` of our own first on PATH: signed in or not, it writes what it was asked to a file and prints a comment's URL. */
function fakeGh(signedIn: boolean): { asked: string } {
  const dir = mkdtempSync(join(tmpdir(), "fake-gh-"));
  dirs.push(dir);
  const asked = join(dir, "asked.json");
  const script = `#!/usr/bin/env node
const args = process.argv.slice(2);
if (args[0] === "auth") process.exit(${signedIn ? 0 : 1});
require("node:fs").writeFileSync(${JSON.stringify(asked)}, JSON.stringify({ args, prompt: process.env.GH_PROMPT_DISABLED }));
console.log("https://github.com/acme/app/issues/12#issuecomment-1");
`;
  writeFileSync(join(dir, "gh"), script);
  chmodSync(join(dir, "gh"), 0o755);
  process.env.PATH = `${dir}:${realPath}`;
  return { asked };
}

describe("commentOnIssue", () => {
  it("posts the body with the machine's GitHub CLI, never letting it prompt", async () => {
    const { asked } = fakeGh(true);
    const body = "**mock** finished task `task-1`: succeeded.\n\n> Wrote notes.txt";
    const posted = await commentOnIssue({ cwd: tmpdir(), repository: "acme/app", issue: 12, body });
    expect(posted).toEqual({ posted: true, url: "https://github.com/acme/app/issues/12#issuecomment-1", reason: null });
    expect(JSON.parse(readFileSync(asked, "utf8"))).toEqual({ args: ["issue", "comment", "12", "--repo", "acme/app", "--body", body], prompt: "1" });
  });

  it("says why not when the CLI is not signed in, or not there", async () => {
    fakeGh(false);
    expect(await commentOnIssue({ cwd: tmpdir(), repository: "acme/app", issue: 12, body: "x" })).toMatchObject({
      posted: false,
      reason: expect.stringContaining("not signed in"),
    });
    process.env.PATH = "/nonexistent";
    expect(await commentOnIssue({ cwd: tmpdir(), repository: "acme/app", issue: 12, body: "x" })).toMatchObject({
      posted: false,
      reason: expect.stringContaining("not installed"),
    });
  });
});
