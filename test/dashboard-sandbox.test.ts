/**
 * Sandboxes in the dashboard (Debian's Chromium, a phone of 390×844) against the real runtime: an admin
 * writes a sandbox rule as a form on the policy's page, tries which sandbox an origin gets, and saves it
 * with the permission rules; a session's view says the sandbox in force, `full` as such for a session
 * started before the rule, the rule's profile for one started after. Nothing scrolls sideways, every
 * target is a thumb's, axe finds nothing serious; screenshots in test-output/dashboard/.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSession } from "./acp-helpers";
import { accessible, fits, launchChromium } from "./browser";
import { startRuntime, type Runtime } from "./harness";

const SCREENSHOTS = join(fileURLToPath(new URL("..", import.meta.url)), "test-output", "dashboard");

let rt: Runtime;
let browser: Browser;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
  browser = await launchChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await rt?.dispose();
});

async function phone(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 });
  const p = await context.newPage();
  p.setDefaultTimeout(15_000);
  p.on("pageerror", (e) => console.error("the page threw:", e.stack));
  await p.goto(`${rt.url}/`);
  await p.fill("#token", rt.token);
  await p.click("#login-form button[type=submit]");
  await p.waitForSelector('nav [data-view="sessions"]');
  return p;
}

/** The runtime's record of the session with that ACP id on that server. */
async function recordOf(serverId: string): Promise<{ id: string }> {
  const listed = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; serverId: string }[] };
  const found = listed.sessions.find((s) => s.serverId === serverId);
  if (!found) throw new Error(`no session recorded on server ${serverId}`);
  return found;
}

describe("sandboxes in the dashboard", () => {
  it("writes a sandbox rule as a form, tries it, saves it; a session's view says the sandbox in force", async () => {
    const p = await phone();
    try {
      // Before any rule: a person's session runs as today, and its view says so plainly.
      await openSession(rt, "before-rule");
      const before = await recordOf("before-rule");
      await p.goto(`${rt.url}/sessions/${before.id}`);
      await p.waitForSelector("#session-sandbox-badge");
      expect(await p.textContent("#session-sandbox-badge")).toBe("full (no sandbox) · open network");
      expect(await p.getAttribute("#session-sandbox-badge", "class")).toContain("full");
      expect(await p.textContent("#session-sandbox")).toContain("the default for a person's session");

      // The policy's page: a sandbox rule for people's sessions of mock, written as a form.
      await p.goto(`${rt.url}/team`);
      await p.waitForSelector("#sandbox-add");
      expect(await p.textContent("#sandbox-rules")).toContain("No sandbox rules");
      await p.click("#sandbox-add");
      await p.fill('#sandbox-rule-editor [name="name"]', "people on mock");
      await p.check('#sandbox-rule-editor [name="origins"][value="session"]');
      await p.fill('#sandbox-rule-editor [name="agents"]', "mock");
      await p.selectOption('#sandbox-rule-editor [name="profile"]', "workspace");
      await p.selectOption('#sandbox-rule-editor [name="network"]', "allowlist");
      await p.fill('#sandbox-rule-editor [name="allow"]', "127.0.0.1:18555");
      await p.fill('#sandbox-rule-editor [name="denyRead"]', "~/private");
      await fits(p, 390, true);
      await accessible(p);
      await p.click('#sandbox-rule-editor button[type="submit"]');
      await p.click("#sandbox-add");
      await p.fill('#sandbox-rule-editor [name="name"]', "triggers read only");
      await p.check('#sandbox-rule-editor [name="origins"][value="trigger"]');
      await p.selectOption('#sandbox-rule-editor [name="profile"]', "read-only");
      await p.selectOption('#sandbox-rule-editor [name="network"]', "none");
      await p.click('#sandbox-rule-editor button[type="submit"]');
      await p.click('button[aria-label="Move sandbox rule 2 up"]');
      expect(await p.locator("#sandbox-rules li strong").allTextContents()).toEqual(["triggers read only", "people on mock"]);

      // The tester answers from the rules on screen, before they are saved.
      await p.click("#policy-tester summary");
      await p.fill('#policy-tester [name="agent"]', "mock");
      await p.selectOption('#policy-tester [name="origin"]', "trigger");
      await p.click("#policy-test");
      await expect.poll(() => p.textContent("#policy-sandbox-verdict")).toContain("sandbox: read-only · no network, by triggers read only");
      await p.selectOption('#policy-tester [name="origin"]', "schedule");
      await p.click("#policy-test");
      await expect
        .poll(() => p.textContent("#policy-sandbox-verdict"))
        .toContain("sandbox: workspace · allowlist (2 hosts), the default for a schedule's task (registry.npmjs.org, github.com)");
      await fits(p, 390, true);
      await accessible(p);
      await p.screenshot({ path: join(SCREENSHOTS, "phone-sandbox-policy.png"), fullPage: true });
      await p.click("#policy-save");
      await expect.poll(() => p.textContent("#policy-msg")).toContain("saved as version");
      expect(((await (await rt.api("/v1/config/policy")).json()) as { sandbox: unknown }).sandbox).toEqual([
        {
          name: "triggers read only",
          match: { origins: ["trigger"] },
          profile: "read-only",
          network: { mode: "none", allow: [] },
          agentHosts: true,
          denyRead: [],
        },
        {
          name: "people on mock",
          match: { agents: ["mock"], origins: ["session"] },
          profile: "workspace",
          network: { mode: "allowlist", allow: ["127.0.0.1:18555"] },
          agentHosts: true,
          denyRead: ["~/private"],
        },
      ]);

      // A session started now runs in the rule's sandbox; the one before keeps its own.
      await openSession(rt, "after-rule");
      const after = await recordOf("after-rule");
      await p.goto(`${rt.url}/sessions/${after.id}`);
      await p.waitForSelector("#session-sandbox-badge");
      expect(await p.textContent("#session-sandbox-badge")).toBe("workspace · allowlist (1 host)");
      expect(await p.textContent("#session-sandbox")).toContain(`asked by the team's rule "people on mock"`);
      expect(await p.textContent("#session-sandbox")).toContain("127.0.0.1:18555");
      await fits(p, 390, true);
      await accessible(p);
      await p.screenshot({ path: join(SCREENSHOTS, "phone-sandbox-session.png"), fullPage: true });
      await p.goto(`${rt.url}/sessions/${before.id}`);
      await p.waitForSelector("#session-sandbox-badge");
      expect(await p.textContent("#session-sandbox-badge")).toBe("full (no sandbox) · open network");
    } finally {
      await p.context().close();
      await rt.api("/v1/config/policy", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ rules: [] }) });
    }
  });
});
