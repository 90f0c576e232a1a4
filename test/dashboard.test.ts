/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against the real
 * runtime: sign in with the token, see `local` connected, install `mock`, chat with it, see the
 * streamed answer, press a permission button.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime, type Runtime } from "./harness";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

let rt: Runtime;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run 'bash scripts/ensure-chromium.sh' (Debian package 'chromium')`);
  rt = await startRuntime({ machines: ["local"] });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  page = await browser.newPage();
});
afterAll(async () => {
  await browser?.close();
  await rt?.dispose();
});

describe("the dashboard", () => {
  it("refuses a wrong token and signs in with the right one", async () => {
    await page.goto(`${rt.url}/`);
    await page.fill("#token", "not-the-token");
    await page.click("#login-form button[type=submit]");
    await expect.poll(() => page.textContent("#login-error")).toContain("refused");
    await page.fill("#token", rt.token);
    await page.click("#login-form button[type=submit]");
    await page.waitForSelector('[data-machine="local"] .dot.on');
    expect(await page.textContent('[data-machine="local"]')).toContain("connected");
  });

  it("shows the agents and installs mock", async () => {
    await page.waitForSelector('tr[data-agent="mock"]');
    expect(await page.textContent('tr[data-agent="mock"] .installed')).toBe("yes");
    expect(await page.textContent('tr[data-agent="claude"] .installed')).toBe("no");
    await page.click('[data-install="mock"]');
    await expect.poll(() => page.textContent("#agents-note")).toContain("mock: already installed");
  });

  it("chats with the mock agent: streamed answer, then a permission button", async () => {
    await page.selectOption("#chat-agent", "mock");
    await page.click("#chat-start");
    await page.waitForSelector("#chat-input:not([disabled])");
    await page.fill("#chat-input", "hello dashboard");
    await page.press("#chat-input", "Enter");
    await expect.poll(() => page.locator(".msg.agent").last().textContent()).toBe("You said: hello dashboard");

    await page.fill("#chat-input", "/permission");
    await page.press("#chat-input", "Enter");
    await page.waitForSelector('[data-permission="allow"]');
    await page.click('[data-permission="allow"]');
    await expect.poll(() => page.locator(".msg.agent").last().textContent()).toBe("Permission granted: wrote hello.txt");
    await page.screenshot({ path: `${rt.dir}/dashboard.png`, fullPage: true });
    if (process.env.DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });

    // The chat's agent process is listed on the page, owned by the system.
    await page.click("#refresh");
    await expect.poll(() => page.textContent("#processes")).toContain("(acp:chat-");
  });

  it("lets an admin connect a machine, issue a token shown once, revoke it, and read the audit log", async () => {
    expect(await page.textContent("#whoami")).toBe("API_TOKEN (admin)");
    await page.click("#connect-new"); // from the machines pane
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("connect-machine");
    await page.fill("#connect-machine", "new-laptop");
    await page.click("#connect-form button[type=submit]");
    await page.waitForSelector("#connect-out:not([hidden])");
    expect(await page.textContent("#connect-command")).toMatch(
      /^echo 'mt2\.new-laptop\.1\.0\.[A-Za-z0-9_-]+' \| npx agent-runtime-sidecar login --url 'http:\/\/127\.0\.0\.1:\d+' --machine 'new-laptop' && npx agent-runtime-sidecar connect$/,
    );

    await page.fill("#token-name", "reader-rita");
    await page.selectOption("#token-role", "viewer");
    await page.click("#token-form button[type=submit]");
    await page.waitForSelector("#token-out:not([hidden])");
    const secret = (await page.textContent("#token-secret"))!;
    expect(secret).toMatch(/^art\./);
    await page.waitForSelector('tr[data-token="reader-rita"]');
    expect(await page.textContent('tr[data-token="reader-rita"]')).toContain("viewer");
    expect(await page.textContent("#tokens")).not.toContain(secret);
    const me = await fetch(`${rt.url}/v1/whoami`, { headers: { authorization: `Bearer ${secret}` } });
    expect(((await me.json()) as { name: string }).name).toBe("reader-rita");

    await page.click('[data-revoke="reader-rita"]');
    await expect.poll(() => page.textContent('tr[data-token="reader-rita"]')).toContain("revoked");
    expect((await fetch(`${rt.url}/v1/whoami`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);

    await page.click("#audit-refresh");
    await expect.poll(() => page.textContent("#audit")).toContain("DELETE /v1/tokens/{id}");
    expect(await page.textContent("#audit")).toContain("POST /v1/machine-tokens");
    if (process.env.DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT.replace(/\.png$/, "-admin.png"), fullPage: true });
  });

  it("shows a viewer no admin pages and no way to change the team's skills", async () => {
    const res = await rt.api("/v1/tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "viewer-vera", role: "viewer" }),
    });
    const { token } = (await res.json()) as { token: string };
    const viewerPage = await browser.newPage();
    try {
      await viewerPage.goto(`${rt.url}/`);
      await viewerPage.fill("#token", token);
      await viewerPage.click("#login-form button[type=submit]");
      await viewerPage.waitForSelector('[data-machine="local"] .dot.on');
      expect(await viewerPage.textContent("#whoami")).toBe("viewer-vera (viewer)");
      expect(await viewerPage.isHidden("#admin")).toBe(true);
      expect(await viewerPage.isHidden("#connect-new")).toBe(true);
      expect(await viewerPage.isDisabled("#skills-save")).toBe(true);
    } finally {
      await viewerPage.close();
    }
  });
});
