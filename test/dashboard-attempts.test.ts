/**
 * Several attempts in the dashboard (docs/architecture.md, "Attempt groups"), on a phone (390×844) in
 * Chromium: a group of two attempts of the mock agent started from the Tasks view, watched to its end,
 * compared (a row each: check, +/−), one attempt's diff against the base and against the other, the
 * passing one merged into the base branch, the other discarded; nothing wider than the screen, axe clean.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accessible, fits, launchChromium } from "./browser";
import { startRuntime, type Runtime } from "./harness";

const SCREENSHOTS = join(fileURLToPath(new URL("..", import.meta.url)), "test-output", "dashboard");

let rt: Runtime;
let browser: Browser;
let repo: string;
const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
  browser = await launchChromium();
  repo = join(rt.dir, "repo");
  mkdirSync(repo);
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Test Person");
  git("config", "user.email", "person@example.com");
  writeFileSync(join(repo, "check.sh"), 'if grep -q -- "-2-mock" notes.txt; then echo "attempt two is wrong"; exit 1; fi\n');
  git("add", ".");
  git("commit", "-q", "-m", "start");
  mkdirSync(SCREENSHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await rt?.dispose();
});

describe("several attempts in the dashboard", () => {
  it("starts a group of two on a phone, compares them, shows the diffs, merges one and discards the other", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 });
    const p = await context.newPage();
    p.setDefaultTimeout(30_000);
    p.on("pageerror", (e) => console.error("the page threw:", e.stack));
    try {
      await p.goto(`${rt.url}/`);
      await p.fill("#token", rt.token);
      await p.click("#login-form button[type=submit]");
      await p.waitForSelector('nav [data-view="sessions"]');
      await p.goto(`${rt.url}/tasks`);
      await p.waitForSelector("#new-group");
      await p.click("#new-group summary");
      await p.check('#new-group input[name="attempt"][value="mock@local"]');
      await p.selectOption('#new-group select[name="runs"]', "2");
      await p.fill('#new-group [name="cwd"]', repo);
      await p.fill('#new-group [name="check"]', "sh check.sh");
      await p.fill('#new-group [name="prompt"]', "/write notes.txt by {{folder}}");
      expect(await p.textContent("#group-start")).toBe("Start 2 attempts");
      await fits(p, 390, true);
      await p.screenshot({ path: join(SCREENSHOTS, "phone-attempts-start.png"), fullPage: true });
      await p.click("#group-start");
      await expect.poll(() => p.textContent("#new-group-msg")).toContain("2 attempts from main");

      const group = '.attempt-group[data-state="finished"]';
      await p.waitForSelector(group);
      const id = (await p.getAttribute(group, "data-group"))!;
      expect(await p.textContent(`${group} tr[data-n="1"]`)).toContain("passed");
      expect(await p.textContent(`${group} tr[data-n="1"]`)).toContain("1 files, +1 −0");
      expect(await p.textContent(`${group} tr[data-n="2"]`)).toContain("failed (exit 1)");
      await fits(p, 390, true);
      await accessible(p);
      await p.screenshot({ path: join(SCREENSHOTS, "phone-attempts-compare.png"), fullPage: true });

      // Attempt 1's diff against the base, then against attempt 2.
      await p.click(`${group} button[data-diff="1"]`);
      await expect.poll(() => p.textContent(`${group} .attempt-diff`)).toContain(`by ${id}-1-mock`);
      await p.selectOption(`${group} .attempt-diff select[name="against"]`, "2");
      await expect.poll(() => p.textContent(`${group} .attempt-diff`)).toContain(`by ${id}-2-mock`);
      await fits(p, 390, true);
      await accessible(p);
      await p.screenshot({ path: join(SCREENSHOTS, "phone-attempts-diff.png"), fullPage: true });

      // Pick the passing one: merged into main; then the other is discarded.
      await p.click(`${group} button[data-pick="1"]`);
      await expect.poll(() => p.textContent(`${group} .hint`)).toContain("picked 1: fast-forward");
      expect(git("show", "main:notes.txt")).toBe(`by ${id}-1-mock\n`);
      await p.click(`${group} button[data-discard-group="${id}"]`);
      await expect.poll(() => p.textContent(`${group} tr[data-n="2"]`)).toContain("discarded");
      expect(git("branch", "--list", `agent/${id}-*`).trim()).toBe(`+ agent/${id}-1-mock`);
      await fits(p, 390, true);
      await p.screenshot({ path: join(SCREENSHOTS, "phone-attempts-picked.png"), fullPage: true });
    } finally {
      await context.close();
    }
  }, 120_000);
});
