import { describe, expect, it } from "vitest";
import { compileCommandPattern, compileGlob, WorkBudget } from "./wildcard";

describe("compileGlob", () => {
  // The globs teams write, with picomatch's answers (the matcher this replaced) for each path.
  const cases: [string, string, boolean][] = [
    ["src/**", "src/a/b.ts", true],
    ["src/**", "src", true],
    ["src/**", "srcx/a", false],
    ["**", "a/b", true],
    ["**/*.ts", "x.ts", true],
    ["**/*.ts", "a/b/x.ts", true],
    ["**/*.ts", "a/b/x.tsx", false],
    ["a/**/b", "a/b", true],
    ["a/**/b", "a/x/y/b", true],
    ["*.md", "README.md", true],
    ["*.md", "docs/README.md", false],
    ["*", ".env", true],
    ["**/.env", "x/.env", true],
    ["src/*.{ts,tsx}", "src/a.tsx", true],
    ["src/*.{ts,tsx}", "src/d/a.ts", false],
    ["{src,test}/**/*.test.ts", "test/x/y.test.ts", true],
    ["a/{b,c/{d,e}}/f", "a/c/e/f", true],
    ["a/{b,c/{d,e}}/f", "a/c/f", false],
    ["*.[jt]s", "a.js", true],
    ["*.[jt]s", "a.cs", false],
    ["[^a].ts", "b.ts", true],
    ["[^a].ts", "a.ts", false],
    ["?", "/", false],
    ["a**b", "axxb", true],
    ["a**b", "ax/xb", false],
    ["a\\*b", "a*b", true],
    ["a\\*b", "axb", false],
    ["/home/ada/.ssh/**", "/home/ada/.ssh/id_ed25519", true],
    ["/home/**", "/home", true],
    ["/**", "/etc/passwd", true],
  ];
  it.each(cases)("%s on %s: %s", (glob, path, expected) => {
    expect(compileGlob(glob)(path)).toBe(expected);
  });
});

describe("compileCommandPattern", () => {
  it("matches `*` across anything, everything else as itself", () => {
    expect(compileCommandPattern("npm run *")("npm run lint")).toBe(true);
    expect(compileCommandPattern("npm run *")("npm test")).toBe(false);
    expect(compileCommandPattern("rm -rf *")("rm -rf /\n")).toBe(true);
    expect(compileCommandPattern("a.c")("abc")).toBe(false);
    expect(compileCommandPattern("*a*b*")("xbxa")).toBe(false);
    expect(compileCommandPattern("*ab*ab*")("xabab")).toBe(true);
    expect(compileCommandPattern("*aba*")("xabxaba")).toBe(true);
    expect(compileCommandPattern("a*a")("a")).toBe(false);
    expect(compileCommandPattern(" git status ")("git status")).toBe(true);
  });
});

describe("no pattern can be made slow", () => {
  // What a backtracking engine takes seconds on: many stars and an input that almost matches, at the schema's
  // limits. The work is counted, not timed: at most the pattern's length times the input's (a few states per
  // character of the glob, four steps each), whatever the machine's load.
  const bound = (pattern: string, input: string) => new WorkBudget(4 * 3 * (pattern.length + 1) * (input.length + 1));
  it.each([
    ["a star-and-letter glob", `${"*a".repeat(255)}!`, "a".repeat(4096)],
    ["a globstar glob", `${"**/a".repeat(100)}!`, `${"a/".repeat(2047)}a`],
    ["a glob of alternatives", `${"{a,*}".repeat(100)}!`, "a".repeat(4096)],
    ["a glob of classes", `${"[a]*".repeat(128)}!`, "a".repeat(4096)],
  ])("%s of 512 characters on a 4,096-character path", (_, glob, path) => {
    const budget = bound(glob, path);
    expect(compileGlob(glob)(path, budget)).toBe(false);
    expect(budget.left).toBeGreaterThan(0);
  });

  it("a command pattern costs its length plus the command's", () => {
    const pattern = `${"*a".repeat(255)}!`;
    const command = "a".repeat(8192);
    const budget = new WorkBudget(pattern.length + command.length + 1);
    expect(compileCommandPattern(pattern)(command, budget)).toBe(false);
    const almost = new WorkBudget(2 * (pattern.length + command.length) + 1);
    expect(compileCommandPattern(pattern)(`${command}!`, almost)).toBe(true);
  });
});
