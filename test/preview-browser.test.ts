/**
 * Previews in Chromium: a real Vite dev server (from npm) on the machine, opened at its own origin
 * (`{port}--local.localhost`, as `npm start` serves it), whose hot reload updates the page when a file on
 * the machine changes; then path mode, where the previewed page's script cannot act as the signed-in
 * user; and the dashboard's Ports on a phone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSession, rpc } from "./acp-helpers";
import { fits, launchChromium } from "./browser";
import { startRuntime, waitFor, type Runtime } from "./harness";
import { freePort, type PreviewApp, startPreviewApp } from "./preview-app";

const VITE = fileURLToPath(new URL("../node_modules/vite/bin/vite.js", import.meta.url));

let rt: Runtime;
let browser: Browser;
let app: PreviewApp;
let vite: ChildProcess;
let vitePort: number;
let viteDir: string;
/** Where the mock agent's own app listens (`/serve`), exposed too. */
let agentPort: number;

async function startVite(): Promise<void> {
  viteDir = await mkdtemp(join(tmpdir(), "preview-vite-"));
  await writeFile(join(viteDir, "index.html"), '<!doctype html><title>app</title><div id="msg">loading</div><script type="module" src="/main.js"></script>');
  await writeFile(join(viteDir, "main.js"), 'document.getElementById("msg").textContent = "first version";\nimport.meta.hot?.accept();\n');
  vitePort = await freePort();
  vite = spawn(process.execPath, [VITE, "--port", String(vitePort), "--strictPort", "--clearScreen", "false"], {
    cwd: viteDir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  vite.stdout?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  vite.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  await waitFor(async () => log.includes("ready in"), `vite to start (${log})`, 30_000);
}

beforeAll(async () => {
  browser = await launchChromium();
  app = await startPreviewApp();
  await startVite();
  agentPort = await freePort();
  rt = await startRuntime({ machines: [], vars: { PREVIEW_DOMAIN: "localhost" } });
  await rt.addSidecar("local", { AGENT_RUNTIME_EXPOSE_PORTS: `${vitePort},${app.port},${agentPort}` });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  vite?.kill("SIGTERM");
  await rt?.dispose();
  await app?.close();
  if (viteDir) await rm(viteDir, { recursive: true, force: true });
});

async function openLink(port: number): Promise<string> {
  const res = await rt.api(`/v1/ports/${port}/preview`, { method: "POST" });
  expect(res.status).toBe(201);
  return ((await res.json()) as { url: string }).url;
}

async function signIn(page: Page): Promise<void> {
  await page.goto(`${rt.url}/`);
  await page.fill("#token", rt.token);
  await page.click("#login-form button[type=submit]");
  await page.waitForSelector('nav [data-view="sessions"]');
}

describe("host mode in Chromium", () => {
  it("loads a Vite app at its own origin and hot-reloads it when a file on the machine changes", async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    // Vite's client says when its hot-reload socket is connected. Before that, a change is not pushed; and
    // a first dial that fails makes it reload the page once it can, which is not what this test is about.
    const logged: string[] = [];
    page.on("console", (message) => logged.push(message.text()));
    const link = await openLink(vitePort);
    expect(new URL(link).host).toBe(`${vitePort}--local.localhost:${new URL(rt.url).port}`);
    await page.goto(link);
    expect(new URL(page.url()).pathname).toBe("/"); // the link's grant is gone from the address bar
    await expect.poll(() => page.textContent("#msg")).toBe("first version");
    await expect.poll(() => logged.some((text) => text.includes("[vite] connected"))).toBe(true);
    // Hot reload, not a reload: what the page holds survives the update.
    await page.evaluate(() => Object.assign(window, { kept: "still here" }));
    await writeFile(join(viteDir, "main.js"), 'document.getElementById("msg").textContent = "second version";\nimport.meta.hot?.accept();\n');
    await expect.poll(() => page.textContent("#msg"), { timeout: 20_000 }).toBe("second version");
    expect(await page.evaluate(() => (window as unknown as { kept?: string }).kept)).toBe("still here");
    // The preview's origin holds its pass only; the dashboard's sign-in never reaches it.
    const cookies = await page.context().cookies(link);
    expect(cookies.map((c) => c.name)).toEqual(["__Host-ar_preview"]);
    expect(cookies[0]).toMatchObject({ httpOnly: true, domain: `${vitePort}--local.localhost` });
    await page.close();
  });
});

describe("the dashboard's Ports, on a phone", () => {
  it("lists the machine's ports, opens an exposed one, and a session view says when its agent's app listens", async () => {
    const acpSession = await openSession(rt, "serves");
    const record = await waitFor(async () => {
      const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
      return sessions.find((s) => s.sessionId === acpSession);
    }, "the session's record");
    const served = await rpc(rt, "serves", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: acpSession, prompt: [{ type: "text", text: `/serve ${agentPort}` }] },
    });
    expect(served.status).toBe(200);
    await waitFor(async () => {
      const { ports } = (await (await rt.api("/v1/ports")).json()) as { ports: { port: number; owner: { kind: string } | null }[] };
      return ports.find((p) => p.port === agentPort)?.owner?.kind === "acp";
    }, "the agent's app listening, named after its agent");

    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await phone.newPage();
    page.setDefaultTimeout(20_000);
    await signIn(page);
    await page.goto(`${rt.url}/machines/local/ports`);
    await page.waitForSelector(`[data-port="${agentPort}"] [data-open]`);
    // Named by its program, and linked to its agent's session (titled by its first prompt) once the sessions are read.
    const sessionLink = `[data-port="${agentPort}"] a[href="/sessions/${record.id}"]`;
    await page.waitForSelector(sessionLink);
    expect(await page.textContent(sessionLink)).toBe(`/serve ${agentPort}`);
    expect(await page.textContent(`[data-port="${agentPort}"]`)).toContain("node · ");
    expect(await page.textContent("#ports-exposed")).toContain(`${agentPort}`);
    // The worker's own port listens here too, not exposed: listed without Open.
    expect(await page.locator(`[data-port="${new URL(rt.url).port}"] [data-open]`).count()).toBe(0);
    await fits(page, 390, true);

    await page.goto(`${rt.url}/sessions/${record.id}`);
    await page.waitForSelector(`#session-ports [data-open="${agentPort}"]`);
    expect(await page.textContent("#session-ports")).toContain(`The agent's app is listening on :${agentPort}`);
    await fits(page, 390, true);
    const [tab] = await Promise.all([page.waitForEvent("popup"), page.click(`#session-ports [data-open="${agentPort}"]`)]);
    await expect.poll(() => tab.textContent("body").catch(() => "")).toBe("served by the mock agent's app");
    expect(new URL(tab.url()).host).toBe(`${agentPort}--local.localhost:${new URL(rt.url).port}`);
    expect(await tab.evaluate(() => window.opener)).toBeNull();
    await phone.close();
  });
});

describe("path mode in Chromium", () => {
  it("serves the app sandboxed: its script cannot call the API as the signed-in user, read the dashboard's storage or cookies", async () => {
    await rt.restartWorker({ PREVIEW_DOMAIN: "" });
    await rt.sidecars.get("local")?.connected(30_000);
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    await signIn(page);
    // Once its service worker controls the page, the dashboard's page is kept for offline use.
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready;
    });
    await page.reload();
    await page.waitForSelector('nav [data-view="sessions"]');
    const keptPage = () => page.evaluate(async () => (await (await caches.match("/"))?.text()) ?? "");
    await expect.poll(keptPage).toContain("<title>agent-runtime</title>");
    // The control: the dashboard's own page calls the API as the user.
    expect(await page.evaluate(async () => (await fetch("/v1/whoami")).status)).toBe(200);
    const link = await openLink(app.port);
    expect(link).toContain(`/machines/local/ports/${app.port}/~`);
    await page.goto(`${link}probe`);
    await expect.poll(() => page.textContent("#out")).toContain("whoami:");
    const out = (await page.textContent("#out")) ?? "";
    expect(out).toContain("storage: SecurityError");
    expect(out).toContain("cookie: SecurityError");
    expect(out).not.toContain("whoami: 200");
    // The dashboard's service worker left the preview alone: the page it keeps for offline is still its own
    // (read from a page of the dashboard's origin that is not an HTML navigation, which would keep itself).
    const other = await context.newPage();
    await other.goto(`${rt.url}/v1/whoami`);
    const kept = await other.evaluate(async () => (await (await caches.match("/"))?.text()) ?? "");
    expect(kept).toContain("<title>agent-runtime</title>");
    expect(kept).not.toContain("whoami");
    await context.close();
  });
});
