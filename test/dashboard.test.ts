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
});
