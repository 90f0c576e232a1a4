/**
 * The dashboard on a phone (390×844, Chromium, axe) for what a session waits for beside permissions: its
 * agent's login, done in the machine's terminal (mock-login's code typed back) or through its own flow
 * (the page it asks to open, then Done), after which the session starts; a question of the agent's answered as a form; and what a session's turns cost.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { accessible, fits, launchChromium } from "./browser";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
let browser: Browser;
let context: BrowserContext;
let p: Page;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 });
  p = await context.newPage();
  p.setDefaultTimeout(15_000);
  p.on("pageerror", (e) => console.error("the page threw:", e.stack));
  await p.goto(`${rt.url}/`);
  await p.fill("#token", rt.token);
  await p.click("#login-form button[type=submit]");
  await p.waitForSelector('nav [data-view="sessions"]');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await rt?.dispose();
});

const screen = () => p.evaluate(() => [...document.querySelectorAll("#terminal .xterm-rows > div")].map((row) => row.textContent ?? "").join("\n"));

type Record = { id: string; sessionId: string; state: string; usage?: { cost: { amount: number } | null } | null };
const record = async (id: string) => (await (await rt.api(`/v1/sessions/${id}`)).json()) as Record;

describe("the dashboard on a phone", () => {
  it("logs an agent in through its terminal method, and the session that waited starts", async () => {
    await rpc(rt, "dash-login", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock-login");
    const refused = (await (await rpc(rt, "dash-login", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
      error: { data: { "agent-runtime/session": string } };
    };
    const id = refused.error.data["agent-runtime/session"];

    await p.goto(`${rt.url}/sessions/${id}`);
    await p.waitForSelector("#session-login");
    expect(await p.textContent("#session-state")).toBe("needs_login");
    await fits(p, 390, true);
    await accessible(p);
    await p.click('#session-login [data-method="mock-terminal"]');
    await p.waitForSelector("#terminal .xterm-rows");
    await expect.poll(screen).toMatch(/code: \d{6}/);
    const code = /code: (\d{6})/.exec(await screen())![1]!;
    await p.click("#terminal");
    await p.keyboard.type(`${code}\n`);
    await waitFor(async () => (await record(id)).state === "idle", "the session to start after the login", 20_000);
    await p.goto(`${rt.url}/sessions/${id}`);
    await expect.poll(() => p.textContent("#session-state")).toBe("idle");
    expect(await p.locator("#session-login").count()).toBe(0);
  }, 90_000);

  it("logs an agent in through its own flow: the page it asks to open is shown, and Done starts the session that waited", async () => {
    await (await rt.api("/v1/agents/mock-login/login", { method: "DELETE" })).text();
    await rpc(rt, "dash-flow", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock-login");
    const refused = (await (await rpc(rt, "dash-flow", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
      error: { data: { "agent-runtime/session": string } };
    };
    const id = refused.error.data["agent-runtime/session"];

    await p.goto(`${rt.url}/sessions/${id}`);
    await p.click('#session-login [data-method="mock-browser"]');
    await p.waitForSelector("#login-page-link");
    expect(await p.getAttribute("#login-page-link", "href")).toBe("https://example.com/mock-agent/device");
    expect(await p.getAttribute("#login-page-link", "target")).toBe("_blank");
    await fits(p, 390, true);
    await accessible(p);
    await p.click('#login-page [data-answer="accept"]');
    await waitFor(async () => (await record(id)).state === "idle", "the session to start after the login", 20_000);
    await p.goto(`${rt.url}/sessions/${id}`);
    await expect.poll(() => p.textContent("#session-state")).toBe("idle");
  }, 90_000);

  it("logs an agent in from the machine's agents view, where the notification of a login leads", async () => {
    await (await rt.api("/v1/agents/mock-login/login", { method: "DELETE" })).text();
    await p.goto(`${rt.url}/machines/local/agents`);
    const row = p.locator('#agents [data-agent="mock-login"]');
    await expect.poll(() => row.locator("[data-login]").textContent()).toContain("needs login");
    await row.locator("[data-login]").click();
    await p.waitForSelector('#agent-login [data-method="mock-terminal"]');
    await fits(p, 390, true);
    await accessible(p);
    await p.fill('#agent-login form[data-method="mock-key"] input[name="MOCK_AGENT_KEY"]', "typed-on-a-phone");
    await p.click('#agent-login form[data-method="mock-key"] button[type=submit]');
    await p.waitForSelector("#agent-logged-in");
    const { login } = (await (await rt.api("/v1/agents/mock-login")).json()) as { login: { state: string; stored: string[] } };
    expect(login).toMatchObject({ state: "logged_in", stored: ["MOCK_AGENT_KEY"] });
    expect(await row.textContent()).not.toContain("needs login");
  }, 90_000);

  it("answers the agent's question as a form, and shows what the session's turns cost", async () => {
    await rpc(rt, "dash-ask", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    const { result } = (await (
      await rpc(rt, "dash-ask", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })
    ).json()) as { result: { sessionId: string } };
    void rpc(rt, "dash-ask", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: result.sessionId, prompt: [{ type: "text", text: "/elicit form" }] },
    });
    const { id } = await waitFor(async () => {
      const { sessions } = (await (await rt.api("/v1/sessions?state=waiting")).json()) as { sessions: Record[] };
      return sessions.find((s) => s.sessionId === result.sessionId);
    }, "the question");

    await p.goto(`${rt.url}/sessions/${id}`);
    await p.waitForSelector("#session-question input[name=name]");
    await fits(p, 390, true);
    await accessible(p);
    await p.fill("#session-question input[name=name]", "Ada");
    await p.click('#session-question [data-answer="accept"]');
    await expect.poll(() => p.textContent("#session-transcript")).toContain("Hello, Ada");
    await waitFor(async () => (await record(id)).usage?.cost, "the turn's cost on the record");
    // "/elicit form" (12) in, "Hello, Ada" (10) out: 22 tokens at $0.000001.
    await expect.poll(() => p.textContent("#session-cost")).toBe(" · $0.000022 · 22 tokens");
    await accessible(p);
  }, 90_000);
});
