/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against the real
 * runtime, view by view at their own addresses: sign in with the token, see `local` connected, install
 * `mock`, start a session with it and follow the streamed answer, press a permission button; a shell in
 * the terminal tab (xterm.js, served by the worker) with a second viewer and a reload; the file browser
 * (open, edit, upload, download); the admin's pages; a phone and a desktop.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSession, rpc } from "./acp-helpers";
import { startRuntime, waitFor, type Runtime } from "./harness";
import { accessible, fits, launchChromium } from "./browser";

/** Screenshots of the dashboard as a person sees it, kept as test output (git-ignored). */
const SCREENSHOTS = join(fileURLToPath(new URL("..", import.meta.url)), "test-output", "dashboard");

let rt: Runtime;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
  browser = await launchChromium();
  page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  page.on("request", (request) => requested.push(request.url()));
  page.on("pageerror", (e) => console.error("the page threw:", e.stack)); // said in the test output when a wait fails
});

/** Every URL the page asked for: the dashboard loads nothing from anywhere but the worker. */
const requested: string[] = [];

async function signIn(p: Page, token: string): Promise<void> {
  p.setDefaultTimeout(15_000); // a wait that fails says which, before the test's own timeout
  await p.goto(`${rt.url}/`);
  await p.fill("#token", token);
  await p.click("#login-form button[type=submit]");
  await p.waitForSelector('nav [data-view="sessions"]');
}

/** Opens a view at its address, as a link or a reload does, and waits for what shows it is drawn. */
async function open(p: Page, path: string, ready: string): Promise<void> {
  await p.goto(`${rt.url}${path}`);
  await p.waitForSelector(ready);
}

/**
 * Requests to `url` (only those of `method`, when given) held until `release()`, counted as they come; the
 * others go on. `stop()` releases what is held and takes the route away.
 */
async function holdRequests(p: Page, url: (url: URL) => boolean, method?: string) {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const hold = {
    asked: 0,
    release: () => release(),
    stop: async () => {
      release();
      await p.unroute(url);
    },
  };
  await p.route(url, async (route) => {
    if (method === undefined || route.request().method() === method) {
      hold.asked++;
      await held;
    }
    await route.continue();
  });
  return hold;
}

/** An ACP server of the mock agent with one session and one finished turn (`text`): the session's record id, its ACP id, and a way to post to the server again. */
async function sessionWithOneTurn(server: string, text: string) {
  const post = (id: number, method: string, params: unknown, query = "") => rpc(rt, server, { jsonrpc: "2.0", id, method, params }, query);
  await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
  const { result } = (await (await post(2, "session/new", { cwd: rt.dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
  await post(3, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text }] });
  const { id } = await waitFor(async () => {
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    return sessions.find((s) => s.sessionId === result.sessionId);
  }, "the session's record");
  return { id, sessionId: result.sessionId, post };
}

/** What the terminal pane shows, row by row (xterm.js renders rows into the DOM). */
const screen = (p: Page) => p.evaluate(() => [...document.querySelectorAll("#terminal .xterm-rows > div")].map((row) => row.textContent ?? "").join("\n"));

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
    await page.waitForSelector("#sessions-list"); // the first view
    await page.click('nav [data-view="machines"]');
    await page.waitForSelector('[data-machine="local"] .dot.on');
    expect(page.url()).toBe(`${rt.url}/machines`);
    expect(await page.textContent('[data-machine="local"]')).toContain("connected");
  });

  it("greets a first visit with the sign-in form and no error, and answers an unknown address with the page, not JSON", async () => {
    const context = await browser.newContext();
    try {
      const first = await context.newPage();
      await first.goto(`${rt.url}/`);
      await first.waitForSelector("#token");
      expect((await first.textContent("#login-error"))?.trim() ?? "").toBe("");
      await accessible(first);
      const missing = await first.goto(`${rt.url}/nope`);
      expect(missing?.status()).toBe(404);
      expect(missing?.headers()["content-type"]).toContain("text/html");
      // An API client asking the same address still gets a problem.
      const api = await fetch(`${rt.url}/nope`);
      expect(api.headers.get("content-type")).toBe("application/problem+json");
    } finally {
      await context.close();
    }
  });

  it("loads only what the first view needs, gzipped: the terminal's xterm.js and the diff renderer come when opened", async () => {
    const context = await browser.newContext();
    const scripts: { url: string; encoding: string | undefined; body: string }[] = [];
    try {
      const p = await context.newPage();
      p.on("response", async (response) => {
        if (!/\/assets\/.*\.js$/.test(response.url())) return;
        scripts.push({ url: response.url(), encoding: (await response.allHeaders())["content-encoding"], body: await response.text() });
      });
      await signIn(p, rt.token);
      await p.waitForSelector("#sessions-list");
      await expect.poll(() => scripts.length).toBeGreaterThan(0);
      expect(scripts.every((s) => s.encoding === "gzip")).toBe(true);
      const first = scripts.map((s) => s.body).join("\n");
      // The page names every script the first view runs (its own, and modulepreload for the chunks it
      // imports): none waits for another to arrive before it is asked for.
      const named = await p.evaluate(() =>
        [...document.querySelectorAll<HTMLScriptElement | HTMLLinkElement>('script[src], link[rel="modulepreload"]')].map((e) => ("src" in e ? e.src : e.href)),
      );
      const firstView = scripts.map((s) => s.url);
      expect(firstView.filter((url) => !named.includes(url))).toEqual([]);
      expect(named.length).toBeGreaterThan(1);
      expect(first).not.toContain("xterm-helper-textarea");
      expect(first).not.toContain("d2h-file-wrapper");
      // Nor a schema library (zod): the session view loads the transcript's schemas with its stream.
      expect(first).not.toContain("invalid_type");
      const before = scripts.length;
      await open(p, "/machines/local/terminal", "#term-open");
      await expect.poll(() => scripts.slice(before).some((s) => s.body.includes("xterm-helper-textarea"))).toBe(true);
    } finally {
      await context.close();
    }
    // A client that takes no gzip gets the same script as it is.
    const page = await (await fetch(`${rt.url}/sessions`)).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page)![1]!;
    const plain = await fetch(`${rt.url}${script}`, { headers: { "accept-encoding": "identity" } });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect((await plain.text()).length).toBeGreaterThan(10_000);
    // From the static assets: a script is cached for good (its name changes with it); the page is asked
    // again on every visit and, unchanged, answered 304 without a body.
    expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const first = await fetch(`${rt.url}/sessions`);
    expect(first.headers.get("cache-control")).toBe("no-cache");
    const again = await fetch(`${rt.url}/sessions`, { headers: { "if-none-match": first.headers.get("etag") ?? "none" } });
    expect(again.status).toBe(304);
    expect(again.headers.get("content-security-policy")).toContain("script-src 'self';");
  });

  it("keeps the sign-in across tabs as an HttpOnly cookie, never the token in the page; signing out ends it", async () => {
    const context = await browser.newContext();
    try {
      const first = await context.newPage();
      await signIn(first, rt.token);
      const [cookie] = await context.cookies(rt.url);
      expect(cookie).toMatchObject({ name: "ar_signin", httpOnly: true, secure: true, sameSite: "Strict" });
      expect(cookie!.value).not.toContain(rt.token);
      // Nothing a script can read holds the token or the sign-in.
      expect(await first.evaluate(() => [document.cookie, JSON.stringify(sessionStorage), JSON.stringify(localStorage)].join("|"))).toBe("|{}|{}");
      const second = await context.newPage();
      await open(second, "/machines", '[data-machine="local"] .dot.on'); // no token asked
      // The cookie works for reads; a change made with it must carry the dashboard's header (no cross-site form can).
      const headers = { cookie: `ar_signin=${cookie!.value}` };
      expect((await fetch(`${rt.url}/v1/whoami`, { headers })).status).toBe(200);
      expect((await fetch(`${rt.url}/v1/tickets`, { method: "POST", headers })).status).toBe(401);
      expect((await fetch(`${rt.url}/v1/tickets`, { method: "POST", headers: { ...headers, "x-agent-runtime-csrf": "1" } })).status).toBe(201);
      await second.click("#logout");
      await second.waitForSelector("#login:not([hidden])");
      expect((await fetch(`${rt.url}/v1/whoami`, { headers })).status).toBe(401); // ended for good, not just cleared
    } finally {
      await context.close();
    }
  });

  it("shows a machine's agents at its own address and installs mock", async () => {
    await page.click('[data-machine="local"]');
    await page.waitForSelector('tr[data-agent="mock"]');
    expect(page.url()).toBe(`${rt.url}/machines/local/agents`);
    expect(await page.textContent('tr[data-agent="mock"] .installed')).toContain("yes");
    expect(await page.textContent('tr[data-agent="claude"] .installed')).toContain("no");
    // What the registry offers, beside it (here the built-in catalog: the tests reach no registry), and a search.
    expect(await page.textContent('tr[data-agent="claude"] .registry')).toContain("0.101.0");
    expect(await page.textContent("main")).toContain("built-in catalog");
    await page.fill("#agents-search", "gemini");
    await expect.poll(() => page.locator("#agents tr").count()).toBe(1);
    await page.fill("#agents-search", "");
    await page.click('[data-install="mock"]');
    await expect.poll(() => page.textContent("#agents-note")).toContain("mock: already installed");
  });

  it("starts a session with mock from the machine's page: streamed answer, then a permission button", async () => {
    await expect.poll(() => page.locator("#new-agent option").allTextContents()).toContain("mock");
    await page.selectOption("#new-agent", "mock");
    await page.fill("#new-cwd", rt.dir);
    await page.click("#new-start");
    await page.waitForURL(/\/sessions\/ses-[0-9a-f]{16}-local$/);
    await page.waitForSelector("#session-input:not([disabled])");
    await page.fill("#session-input", "hello dashboard");
    await page.press("#session-input", "Enter");
    await expect.poll(async () => (await page.locator("#session-transcript .entry.agent").last().textContent())?.trim()).toBe("You said: hello dashboard");

    // The agent asks; the page answers.
    await page.fill("#session-input", "/permission");
    await page.press("#session-input", "Enter");
    await page.waitForSelector('[data-answer="allow"]');
    await page.click('[data-answer="allow"]');
    await expect
      .poll(async () => (await page.locator("#session-transcript .entry.agent").last().textContent())?.trim())
      .toBe("Permission granted: wrote hello.txt");
    await page.screenshot({ path: `${rt.dir}/dashboard.png`, fullPage: true });
    if (process.env.DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });

    // The session's agent process is listed on the machine's processes, owned by the system.
    await open(page, "/machines/local/processes", "#processes");
    await expect.poll(() => page.textContent("#processes")).toContain("(acp:dash-");
  });

  it("opens a shell in the terminal tab: typing, output, resize, the phone's keys, a second viewer, a reload, and ending it", async () => {
    await open(page, "/machines/local/terminal", "#term-open");
    await page.click("#term-open");
    await page.waitForSelector("#terminal .xterm-rows");
    await expect.poll(() => page.textContent("#term-state")).toMatch(/attached to/);
    await page.click("#terminal");
    await page.keyboard.type("echo hi-$((40+2))\n");
    await expect.poll(() => screen(page)).toContain("hi-42");

    // The pane fits the terminal to its box: a narrower window gives the shell fewer columns.
    await page.keyboard.type("stty size\n");
    await expect.poll(() => screen(page)).toMatch(/^\d+ \d+\s*$/m);
    const before = (await screen(page)).match(/^(\d+) (\d+)\s*$/m)!;
    await page.setViewportSize({ width: 800, height: 900 });
    await page.keyboard.type("clear; stty size\n");
    await expect.poll(async () => (await screen(page)).match(/^(\d+) (\d+)\s*$/m)?.[2]).not.toBe(before[2]);

    // The keys a phone lacks: Ctrl then u clears the typed line, ↑ brings the last command back, Tab completes.
    await page.keyboard.type("rubbish");
    await page.click('[data-key="ctrl"]');
    await page.keyboard.type("u");
    await page.keyboard.type("echo keys-$((2*3))\n");
    await expect.poll(() => screen(page)).toContain("keys-6");
    expect(await screen(page)).not.toContain("rubbishecho");
    await page.keyboard.type("clear\n");
    await page.click('[data-key="up"]'); // `clear` again, from the shell's history
    await page.click('[data-key="up"]'); // the echo before it
    await page.keyboard.type("\n");
    await expect.poll(() => screen(page)).toContain("keys-6");

    // A second viewer attaches to the same shell and sees what was written before it came.
    const second = await browser.newPage();
    try {
      await signIn(second, rt.token);
      await open(second, "/machines/local/processes", "[data-attach]");
      await second.click("[data-attach]");
      await second.waitForURL(/\/machines\/local\/terminal\?process=/);
      // Replayed from the first byte: the screen after the last `clear` (the command ↑ brought back, and its output).
      await expect.poll(() => screen(second)).toContain("keys-6");
      await second.click("#terminal");
      await second.keyboard.type("echo from-the-second-$((1+1))\n");
      await expect.poll(() => screen(page)).toContain("from-the-second-2");
    } finally {
      await second.close();
    }
    // The address names the shell: a reload attaches to it again and draws its screen anew.
    expect(page.url()).toMatch(/\/machines\/local\/terminal\?process=/);
    await page.reload();
    await expect.poll(() => screen(page)).toContain("from-the-second-2");
    await page.click("#term-end");
    await expect.poll(() => page.isVisible("#terminal")).toBe(false);
    await open(page, "/machines/local/processes", "#processes tr");
    await expect.poll(() => page.locator("[data-attach]").count()).toBe(0);
    await page.setViewportSize({ width: 1280, height: 720 });
  });

  it("starts a process from the page and shows its output", async () => {
    await open(page, "/machines/local/processes", "#proc-form");
    // What the page reads on opening is drawn (the machine's presence in the header) before typing: this
    // test is about starting; typing while it arrives is the next one's.
    await page.waitForSelector("#machine-view h2 .dot.on");
    const command = "echo started-from-the-page-$((6*7)) | tr a-z A-Z";
    await page.fill("#proc-command", command);
    await page.click("#proc-form button[type=submit]");
    await expect.poll(() => page.textContent("#proc-msg")).toMatch(/^started /);
    // Started: the box is emptied for the next command.
    expect(await page.inputValue("#proc-command")).toBe("");
    await expect.poll(() => page.textContent("#logs")).toContain("STARTED-FROM-THE-PAGE-42");
    // The stream's last event says how it exited (read with the protocol's schema, ProcessLogEnd).
    await expect.poll(() => page.textContent("#logs")).toContain("[exited: 0]");
  });

  it("stops a running process from its row: the row then says it exited and offers no Stop", async () => {
    await open(page, "/machines/local/processes", "#proc-form");
    await page.waitForSelector("#machine-view h2 .dot.on");
    await page.fill("#proc-command", "sleep 300");
    await page.click("#proc-form button[type=submit]");
    await expect.poll(() => page.textContent("#proc-msg")).toMatch(/^started /);
    const id = (await page.textContent("#proc-msg"))!.slice("started ".length);
    const row = page.locator("#processes tr", { has: page.locator(`[data-kill="${id}"]`) });
    await row.locator("[data-kill]").click();
    await expect.poll(() => page.locator(`[data-kill="${id}"]`).count()).toBe(0);
    expect(await page.locator("#processes tr", { hasText: id }).textContent()).toContain("exited");
  });

  it("keeps a command typed while the machine's presence arrives, and says why spaces alone start nothing", async () => {
    // The form is drawn once the page knows who is signed in; the machine's presence (the header's dot)
    // comes after, from the machines list. Held here until the command is typed: what was typed survives it.
    const machinesList = await holdRequests(page, (url) => url.pathname === "/v1/machines");
    try {
      await open(page, "/machines/local/processes", "#proc-form");
      const command = "echo kept-while-drawn-again-$((6*7)) | tr a-z A-Z";
      await page.fill("#proc-command", command);
      await expect.poll(() => machinesList.asked).toBeGreaterThan(0);
      expect(await page.locator("#machine-view h2 .dot").count()).toBe(0); // not known yet
      machinesList.release();
      await page.waitForSelector("#machine-view h2 .dot.on");
      expect(await page.inputValue("#proc-command")).toBe(command);
      await page.click("#proc-form button[type=submit]");
      await expect.poll(() => page.textContent("#proc-msg")).toMatch(/^started /);
      await expect.poll(() => page.textContent("#logs")).toContain("KEPT-WHILE-DRAWN-AGAIN-42");
      // Spaces pass the box's `required`: the page says what is missing rather than doing nothing.
      await page.fill("#proc-command", "   ");
      await page.click("#proc-form button[type=submit]");
      await expect.poll(() => page.textContent("#proc-msg")).toContain("Type a command");
    } finally {
      await machinesList.stop();
    }
  });

  it("keeps the folder typed in a machine's Start a session while its agents are still being read", async () => {
    const agentsList = await holdRequests(page, (url) => url.pathname === "/machines/local/v1/agents" && url.searchParams.get("config") === "true");
    try {
      await open(page, "/machines/local/agents", "#new-cwd");
      await page.waitForSelector("#machine-view h2 .dot.on");
      await page.fill("#new-cwd", rt.dir);
      await expect.poll(() => agentsList.asked).toBeGreaterThan(0);
      expect(await page.locator('tr[data-agent="mock"]').count()).toBe(0); // not read yet
      agentsList.release();
      await page.waitForSelector('tr[data-agent="mock"]');
      expect(await page.inputValue("#new-cwd")).toBe(rt.dir);
      await expect.poll(() => page.locator("#new-agent option").allTextContents()).toContain("mock");
    } finally {
      await agentsList.stop();
    }
  });

  it("browses, edits, uploads and downloads files on the machine", async () => {
    const folder = join(rt.dir, "ui-files");
    mkdirSync(join(folder, "sub"), { recursive: true });
    writeFileSync(join(folder, "note.txt"), "first line\n");
    await open(page, "/machines/local/files", "#files tr"); // HOME, first
    await page.fill("#files-path", folder);
    await page.click("#files-form button[type=submit]");
    await page.waitForSelector('tr[data-entry="note.txt"]');
    expect(await page.textContent('tr[data-entry="sub"]')).toContain("sub");

    expect(page.url()).toBe(`${rt.url}/machines/local/files?path=${encodeURIComponent(folder).replace(/%20/g, "+")}`);
    await page.click('tr[data-entry="note.txt"] td.name button');
    await page.waitForSelector("#file-editor:not([hidden])");
    expect(await page.inputValue("#file-text")).toBe("first line\n");
    await page.fill("#file-text", "edited in the browser\n");
    await page.click("#file-save");
    await expect.poll(() => page.textContent("#file-msg")).toContain("saved");
    expect(readFileSync(join(folder, "note.txt"), "utf8")).toBe("edited in the browser\n");

    await page.setInputFiles("#files-upload", { name: "upload.bin", mimeType: "application/octet-stream", buffer: Buffer.from([0, 1, 2, 250, 255]) });
    await page.waitForSelector('tr[data-entry="upload.bin"]');
    expect([...readFileSync(join(folder, "upload.bin"))]).toEqual([0, 1, 2, 250, 255]);

    const [download] = await Promise.all([page.waitForEvent("download"), page.click('tr[data-entry="upload.bin"] [data-download]')]);
    expect(download.suggestedFilename()).toBe("upload.bin");
    expect([...readFileSync((await download.path())!)]).toEqual([0, 1, 2, 250, 255]);

    await page.click('tr[data-entry="sub"] td.name button');
    await expect.poll(() => page.inputValue("#files-path")).toBe(join(folder, "sub"));
    await page.click("#files-up");
    await expect.poll(() => page.inputValue("#files-path")).toBe(folder);

    // A file tapped near the top of a long folder opens where the person is looking, not a screen or more below.
    for (let i = 0; i < 60; i++) writeFileSync(join(folder, "sub", `f-${String(i).padStart(2, "0")}.txt`), `file ${i}\n`);
    await page.click('tr[data-entry="sub"] td.name button');
    await page.click('tr[data-entry="f-00.txt"] td.name button');
    await expect.poll(() => page.inputValue("#file-text")).toBe("file 0\n");
    const viewport = page.viewportSize()!;
    await expect
      .poll(async () => {
        const box = (await page.locator("#file-editor").boundingBox())!;
        return box.y >= 0 && box.y < viewport.height;
      })
      .toBe(true);
  });

  it("lists sessions waiting first, reopens one after a reload, answers its permission, prompts it and continues it", async () => {
    // A session started elsewhere (through the API), one finished turn.
    const post = (id: number, method: string, params: unknown, query = "") => rpc(rt, "from-api", { jsonrpc: "2.0", id, method, params }, query);
    await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
    const { result } = (await (await post(2, "session/new", { cwd: rt.dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
    await post(3, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "started from the API" }] });
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    const id = sessions.find((s) => s.sessionId === result.sessionId)!.id;

    await open(page, "/sessions", "#sessions-list");
    await page.click("#sessions-refresh");
    await page.click(`[data-session="${id}"]`);
    await expect.poll(() => page.textContent("#session-transcript")).toContain("You said: started from the API");
    expect(page.url()).toBe(`${rt.url}/sessions/${id}`);

    // A reload keeps the place: the same session, its transcript read again.
    await page.reload();
    await page.waitForSelector("#session-view");
    await expect.poll(() => page.textContent("#session-transcript")).toContain("You said: started from the API");
    // A link sent before views had their own paths opens the same session, at its address.
    await page.goto(`${rt.url}/#session=${id}`);
    await page.waitForURL(`${rt.url}/sessions/${id}`);

    // The agent asks (a turn started elsewhere): the question shows, the tab title counts it, the page answers it.
    const turn = post(4, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "/permission" }] });
    await page.waitForSelector('[data-answer="allow"]');
    expect(await page.textContent("#session-pending")).toContain("The agent asks: Write hello.txt");
    await page.click("#session-close-view");
    await page.waitForSelector(`[data-session="${id}"] .ask`);
    expect(await page.textContent(`[data-session="${id}"]`)).toContain("asks: Write hello.txt");
    expect(await page.locator("#sessions-list .session").first().getAttribute("data-session")).toBe(id); // waiting first
    await expect.poll(() => page.title()).toBe("(1) agent-runtime");
    await page.click(`[data-session="${id}"]`);
    await page.click('[data-answer="allow"]');
    expect(((await (await turn).json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
    await expect.poll(() => page.textContent("#session-transcript")).toContain("Permission granted: wrote hello.txt");
    await expect.poll(() => page.textContent("#session-state")).toBe("idle");

    // The page prompts the session itself (through the relay), and follows the reply live.
    await page.fill("#session-input", "typed on the page");
    await page.press("#session-input", "Enter");
    await expect.poll(() => page.textContent("#session-transcript")).toContain("You said: typed on the page");

    // Continue: a new session primed with this one's conversation, opened at its own URL.
    await page.click("#session-continue");
    await expect.poll(() => page.textContent("#session-meta")).toContain("continued from an earlier session");
    const next = decodeURIComponent(page.url().split("/sessions/")[1]!);
    expect(next).not.toBe(id);
    await page.fill("#session-input", "go on");
    await page.press("#session-input", "Enter");
    await expect.poll(() => page.textContent("#session-transcript")).toContain("User: started from the API");
    const record = await waitFor(async () => {
      const r = (await (await rt.api(`/v1/sessions/${next}`)).json()) as { continuedFrom: string | null; state: string };
      return r.state === "idle" && r;
    }, "the continued turn to end");
    expect(record.continuedFrom).toBe(id);
    // The way back to where it came from is a link.
    expect(await page.getAttribute("#session-continued-from", "href")).toBe(`/sessions/${encodeURIComponent(id)}`);
    // Closing asks first, and says what it does; "Keep it" keeps it.
    await page.click("#session-end");
    expect(await page.textContent("#session-end-confirm")).toContain("Its agent stops; the transcript stays.");
    await page.click("#session-end-no");
    expect(await page.locator("#session-end-confirm").count()).toBe(0);
    expect(((await (await rt.api(`/v1/sessions/${next}`)).json()) as { state: string }).state).toBe("idle");
    if (process.env.DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT.replace(/\.png$/, "-session.png"), fullPage: true });
    await page.click("#session-close-view");
  });

  it("says it is busy while this browser's push service is asked, then what failed, in words", async () => {
    const context = await browser.newContext();
    try {
      await context.grantPermissions(["notifications"], { origin: rt.url });
      const p = await context.newPage();
      await signIn(p, rt.token);
      await p.waitForSelector("#sessions-list");
      // Every state the button passes through (the refusal may come within milliseconds of the click).
      await p.evaluate(() => {
        const button = document.querySelector<HTMLButtonElement>("#notify-me")!;
        const seen: string[] = [];
        (window as unknown as { notifyStates: string[] }).notifyStates = seen;
        new MutationObserver(() => seen.push(`${button.disabled ? "disabled" : "enabled"}: ${button.textContent}`)).observe(button, {
          attributes: true,
          childList: true,
          subtree: true,
          characterData: true,
        });
      });
      await p.click("#notify-me");
      // At once: the button says what it is doing and cannot be pressed twice.
      await expect.poll(() => p.evaluate(() => (window as unknown as { notifyStates: string[] }).notifyStates)).toContain("disabled: Subscribing…");
      // This Chromium reaches no push service: it refuses or never answers (15 s), and either is said plainly.
      await expect.poll(() => p.locator("#notify-me").isEnabled(), { timeout: 25_000 }).toBe(true);
      const said = (await p.textContent("#notify-msg")) ?? "";
      expect(said).toMatch(/this browser('s push service)? could not subscribe|did not answer within 15 s/);
      expect(said).not.toMatch(/Registration failed|push service error/); // the browser's own words say nothing to a person
    } finally {
      await context.close();
    }
  });

  it("is installable, and its service worker shows a pushed question and knows where a tap goes", async () => {
    const manifest = (await (await fetch(`${rt.url}/manifest.webmanifest`)).json()) as { start_url: string; display: string; icons: { src: string }[] };
    expect(manifest).toMatchObject({ start_url: "/", display: "standalone" });
    expect((await fetch(`${rt.url}${manifest.icons[0]!.src}`)).headers.get("content-type")).toBe("image/svg+xml");
    await page.context().grantPermissions(["notifications"], { origin: rt.url });
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
    const cdp = await page.context().newCDPSession(page);
    const registration = new Promise<string>((resolve) =>
      cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }: { registrations: { registrationId: string; scopeURL: string }[] }) => {
        const ours = registrations.find((r) => r.scopeURL.startsWith(rt.url));
        if (ours) resolve(ours.registrationId);
      }),
    );
    await cdp.send("ServiceWorker.enable");
    // What the push service hands the browser, once decrypted (the payload the runtime encrypts: see notifications.test.ts).
    const message = {
      title: "mock on local needs you",
      body: "Write hello.txt",
      url: `${rt.url}/sessions/ses-0123456789abcdef-local`,
      event: "permission.requested",
      tag: "ses-0123456789abcdef-local",
    };
    const registrationId = await registration;
    // The page hidden, its poll pauses: a read of the sessions list from now on is the push's doing.
    await page.evaluate(() => {
      Object.defineProperty(document, "visibilityState", { value: "hidden", configurable: true });
      document.dispatchEvent(new Event("visibilitychange")); // the sessions' live stream closes too
    });
    const listReads: string[] = [];
    const onRequest = (request: { url(): string }) => {
      if (new URL(request.url()).pathname === "/v1/sessions") listReads.push(request.url());
    };
    page.on("request", onRequest);
    const shown = () =>
      page.evaluate(async () =>
        (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({
          title: n.title,
          body: n.body,
          data: n.data,
          tag: n.tag,
          sticky: n.requireInteraction,
        })),
      );
    // Delivered until shown: a worker still starting may miss the first (the same tag replaces, never adds).
    await expect
      .poll(
        async () => {
          const now = await shown();
          if (now.length === 0) await cdp.send("ServiceWorker.deliverPushMessage", { origin: `${rt.url}/`, registrationId, data: JSON.stringify(message) });
          return now;
        },
        { timeout: 20_000, interval: 500 },
      )
      .toEqual([{ title: "mock on local needs you", body: "Write hello.txt", data: { url: message.url }, tag: message.tag, sticky: true }]);
    // The open page was told, and read its sessions again (its waiting count follows the push).
    await expect.poll(() => listReads.length).toBeGreaterThan(0);
    page.off("request", onRequest);
    await page.evaluate(() => delete (document as { visibilityState?: DocumentVisibilityState }).visibilityState);
    await cdp.detach();
  });

  it("counts a question asked on a machine at once, with no notifications and no poll: the live list", async () => {
    const sessionId = await openSession(rt, "live-count");
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    const id = sessions.find((s) => s.sessionId === sessionId)!.id;
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const p = await context.newPage();
      // The 10 s poll never runs on this page: what it shows of a change comes from the sessions' live stream.
      await p.addInitScript(() => {
        const every = window.setInterval.bind(window);
        window.setInterval = ((handler: TimerHandler, ms?: number, ...rest: unknown[]) =>
          ms === 10_000 ? 0 : every(handler, ms, ...rest)) as typeof window.setInterval;
      });
      await signIn(p, rt.token);
      await open(p, "/sessions", `[data-session="${id}"]`);
      expect(await p.locator(`[data-session="${id}"] .ask`).count()).toBe(0);
      const turn = rpc(rt, "live-count", {
        jsonrpc: "2.0",
        id: 3,
        method: "session/prompt",
        params: { sessionId, prompt: [{ type: "text", text: "/permission" }] },
      });
      await p.waitForSelector(`[data-session="${id}"] .ask`);
      expect(await p.title()).toMatch(/^\(\d+\) agent-runtime$/);
      // Answered elsewhere (the API): the page stops counting it, again from the stream.
      const waiting = (await (await rt.api(`/v1/sessions/${id}`)).json()) as { pending: { requestId: string | number } };
      const answer = { requestId: waiting.pending.requestId, optionId: "allow" };
      const answered = await rt.api(`/v1/sessions/${id}/permission`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(answer),
      });
      expect(answered.status).toBe(200);
      expect(((await (await turn).json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
      await expect.poll(() => p.locator(`[data-session="${id}"] .ask`).count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it("fits a phone (390×844) and a desktop (1280×800): a waiting session answered, a Markdown reply, a 1,000-character word, no sideways scrolling, 44 px targets", async () => {
    const post = (id: number, method: string, params: unknown, query = "") => rpc(rt, "phone", { jsonrpc: "2.0", id, method, params }, query);
    await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
    const { result } = (await (await post(2, "session/new", { cwd: rt.dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
    const longWord = "w".repeat(1000);
    await post(3, "session/prompt", {
      sessionId: result.sessionId,
      prompt: [{ type: "text", text: `**bold** and \`code\` and [a link](https://example.com/) ${longWord}` }],
    });
    const turn = post(4, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "/permission" }] });
    const { id } = await waitFor(async () => {
      const { sessions } = (await (await rt.api("/v1/sessions?state=waiting")).json()) as { sessions: { id: string; sessionId: string }[] };
      return sessions.find((s) => s.sessionId === result.sessionId);
    }, "the session to wait");
    mkdirSync(SCREENSHOTS, { recursive: true });

    for (const [name, options] of [
      ["phone", { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 }],
      ["desktop", { viewport: { width: 1280, height: 800 } }],
    ] as const) {
      const context = await browser.newContext(options);
      const p = await context.newPage();
      try {
        await signIn(p, rt.token);
        await open(p, `/sessions/${id}`, "#session-view");
        await expect.poll(() => p.locator("#session-transcript strong").first().textContent()).toBe("bold");
        expect(await p.locator('#session-transcript a[href="https://example.com/"]').getAttribute("rel")).toContain("noopener");
        if (name === "phone") await p.waitForSelector('[data-answer="allow"]');
        const phone = name === "phone";
        const width = options.viewport.width;
        await fits(p, width, phone);
        await accessible(p);
        // The nav with its waiting count stays one row on a phone (it used to wrap when the count appeared).
        if (phone) {
          await expect.poll(() => p.locator("nav.main .count").textContent()).toBe("1");
          const navRows = () => p.$$eval("nav.main a", (links) => new Set(links.map((a) => Math.round(a.getBoundingClientRect().top))).size);
          await expect.poll(navRows).toBe(1);
        }
        if (phone) {
          await p.screenshot({ path: join(SCREENSHOTS, "phone-session-waiting.png") });
          await p.click('[data-answer="allow"]');
          await expect.poll(() => p.textContent("#session-transcript")).toContain("Permission granted");
          // The transcript stays scrolled to its end as the reply comes in.
          const fromEnd = () =>
            p.evaluate(() => {
              const box = document.querySelector("#session-transcript")!;
              return box.scrollHeight - box.scrollTop - box.clientHeight;
            });
          await expect.poll(fromEnd).toBeLessThan(40);
          expect(await p.evaluate(() => document.querySelector("#session-transcript")!.scrollTop)).toBeGreaterThan(0);
        }
        await p.screenshot({ path: join(SCREENSHOTS, `${name}-session.png`), fullPage: true });

        // Every other view fits too.
        for (const [path, ready] of [
          ["/sessions", "#sessions-list .session"],
          ["/machines", '[data-machine="local"]'],
          ["/machines/local/agents", 'tr[data-agent="mock"]'],
          ["/machines/local/processes", "#processes tr"],
          [`/machines/local/files?path=${encodeURIComponent(rt.dir)}`, "#files tr"],
          ["/machines/local/ports", "#ports-list tr"],
          ["/tasks", "#tasks-view"],
          ["/team", "#policy-rules li"],
          ["/team/mcp", "#mcp-entries li"],
          ["/admin", "#audit tr"],
        ] as const) {
          await open(p, path, ready);
          await fits(p, width, phone);
          await accessible(p);
          await p.screenshot({ path: join(SCREENSHOTS, `${name}-${path.split("?")[0]!.slice(1).replace(/\//g, "-")}.png`), fullPage: true });
        }
        // The terminal on a phone: typed with the screen keyboard, and the keys it lacks from the row under it.
        await open(p, "/machines/local/terminal", "#term-open");
        await p.click("#term-open");
        await p.waitForSelector("#terminal .xterm-rows");
        await expect.poll(() => p.textContent("#term-state")).toMatch(/attached to/);
        await p.click("#terminal");
        await p.keyboard.type("echo fits-$((3+4))\n");
        await expect.poll(() => screen(p)).toContain("fits-7");
        await p.keyboard.type("clear\n");
        await p.click('[data-key="up"]');
        await p.click('[data-key="up"]');
        await p.keyboard.type("\n");
        await expect.poll(() => screen(p)).toContain("fits-7");
        await fits(p, width, phone);
        await accessible(p);
        await p.screenshot({ path: join(SCREENSHOTS, `${name}-terminal.png`), fullPage: true });
        await p.click("#term-end");
      } finally {
        await context.close();
      }
    }
    expect(((await (await turn).json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
  }, 180_000); // two devices, ten views each, each checked by axe: about 85 s on a loaded two-core machine

  it("reviews and ships on a phone and a desktop: a session's changes, one file's diff, a turn reverted, a commit; an edit's diff while the turn streams", async () => {
    const repo = join(rt.dir, "review-project");
    mkdirSync(repo);
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });
    git("init", "-q", "-b", "main");
    git("config", "user.name", "Test Person");
    git("config", "user.email", "person@example.com");
    writeFileSync(join(repo, "app.js"), "let a = 1;\n");
    git("add", ".");
    git("commit", "-q", "-m", "start");
    const post = (id: number, method: string, params: unknown, query = "") => rpc(rt, "review", { jsonrpc: "2.0", id, method, params }, query);
    await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
    const { result } = (await (await post(2, "session/new", { cwd: repo, mcpServers: [] })).json()) as { result: { sessionId: string } };
    const say = (id: number, text: string) => post(id, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text }] });
    await say(3, `/write app.js let a = 2; // ${"a long line that must wrap inside the diff ".repeat(8)}`);
    await say(4, "/write notes/todo.md remember the milk");
    const { id } = await waitFor(async () => {
      const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
      return sessions.find((s) => s.sessionId === result.sessionId);
    }, "the session's record");
    mkdirSync(SCREENSHOTS, { recursive: true });

    for (const [name, options] of [
      ["desktop", { viewport: { width: 1280, height: 800 } }],
      ["phone", { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 }],
    ] as const) {
      const context = await browser.newContext(options);
      const p = await context.newPage();
      const phone = name === "phone";
      try {
        await signIn(p, rt.token);
        await open(p, `/sessions/${id}`, '#session-transcript [data-kind="stop"] a');
        expect(await p.textContent("#session-changes")).toContain("1 file, +1 −0");
        await p.click("#session-changes");
        await p.waitForSelector('#changes-files li[data-path="app.js"]');
        expect(await p.textContent("#changes-totals")).toContain("2 files, +2 −1");
        await p.click('li[data-path="app.js"] button.file-row');
        await p.waitForSelector('li[data-path="app.js"] .diff .d2h-code-line');
        // Added and removed lines keep their sign, not colour alone.
        const signs = await p.locator('li[data-path="app.js"] .d2h-code-line-prefix').allTextContents();
        expect(signs.map((t) => t.trim())).toEqual(expect.arrayContaining(["+", "-"]));
        await fits(p, options.viewport.width, phone);
        await p.screenshot({ path: join(SCREENSHOTS, `${name}-changes.png`), fullPage: true });
        await p.waitForSelector("#git-status");
        await fits(p, options.viewport.width, phone);
        await accessible(p);
        if (!phone) continue;
        // Turn 2 undone from the phone (the desktop only looked), then the rest committed.
        await p.click('#changes-turns a:has-text("Turn 2")');
        await p.waitForSelector('#changes-files li[data-path="notes/todo.md"]');
        await p.click("#changes-revert");
        await p.click("#changes-revert-yes");
        await expect.poll(() => p.textContent("#changes-msg")).toContain("Turn 2 reverted");
        expect(existsSync(join(repo, "notes/todo.md"))).toBe(false);
        await p.fill("#commit-message", "Make a two");
        await p.click("#git-commit");
        await expect.poll(() => p.textContent("#ship-msg")).toContain("Committed");
        expect(git("log", "-1", "--format=%s").trim()).toBe("Make a two");
        expect(git("status", "--porcelain")).toBe("");
        await p.screenshot({ path: join(SCREENSHOTS, "phone-changes-shipped.png"), fullPage: true });
      } finally {
        await context.close();
      }
    }

    // While a turn the page sent streams, an edit the agent reports shows as a diff (kept nowhere).
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await context.newPage();
    try {
      await signIn(p, rt.token);
      await open(p, `/sessions/${id}`, "#session-input");
      await p.fill("#session-input", "/write live.txt shown as it happens");
      await p.click("#session-send");
      await p.waitForSelector(".live-edit .diff .d2h-code-line");
      expect(await p.textContent(".live-edit")).toContain("shown as it happens");
    } finally {
      await context.close();
    }
  }, 90_000); // two devices, the diff checked by axe on each: about 35 s on a loaded two-core machine

  it("shows the last sessions seen without a network, and forgets them at sign-out", async () => {
    const context = await browser.newContext();
    try {
      const p = await context.newPage();
      await signIn(p, rt.token);
      await p.waitForFunction(() => navigator.serviceWorker.controller !== null);
      // A visit with the worker in control: the page, its scripts and the sessions go through it, which keeps them.
      await p.reload();
      await p.waitForSelector("#sessions-list .session");
      const titles = await p.locator("#sessions-list .session .title").allTextContents();
      await context.setOffline(true);
      await p.reload();
      await p.waitForSelector("#sessions-list .session");
      expect(await p.locator("#sessions-list .session .title").allTextContents()).toEqual(titles);
      expect(await p.textContent("#sessions-waiting")).toContain("offline");
      // Any view's address opens the kept page without a network (a notification's link to a session, say).
      await p.goto(`${rt.url}/machines`);
      await p.waitForSelector("#machines-view");
      await context.setOffline(false);
      await p.reload();
      await p.waitForSelector('[data-machine="local"] .dot.on');
      await p.click("#logout");
      await p.waitForSelector("#login:not([hidden])");
      await expect.poll(() => p.evaluate(async () => (await caches.keys()).length)).toBe(0);
    } finally {
      await context.close();
    }
  });

  it("keeps an opened session readable without a network, says so, and picks the stream up again by itself", async () => {
    const { id, sessionId, post } = await sessionWithOneTurn("kept", "kept for later");
    const context = await browser.newContext();
    try {
      const p = await context.newPage();
      await signIn(p, rt.token);
      await p.waitForFunction(() => navigator.serviceWorker.controller !== null);
      await open(p, `/sessions/${id}`, '#session-transcript [data-kind="stop"]');
      await context.setOffline(true);
      await p.reload();
      await expect.poll(() => p.textContent("#session-transcript")).toContain("You said: kept for later");
      await expect.poll(() => p.textContent("#session-connection")).toContain("Offline: this is the transcript as last seen");
      await context.setOffline(false);
      // Back by itself (no reload): the note goes, and what happens now arrives live.
      await expect.poll(() => p.locator("#session-connection").count(), { timeout: 40_000 }).toBe(0);
      await post(4, "session/prompt", { sessionId, prompt: [{ type: "text", text: "after the outage" }] });
      await expect.poll(() => p.textContent("#session-transcript")).toContain("You said: after the outage");
      // Picked up where it stopped (Last-Event-ID): every entry once, in order.
      const seqs = (await p.locator("#session-transcript [data-seq]").evaluateAll((els) => els.map((e) => e.getAttribute("data-seq")))).map(Number);
      expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));

      // The prompt box waits for the kept transcript: a turn sent from it tells its edits from earlier turns' by it.
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await context.route(/\/transcript\?after=0&limit=1000$/, async (route) => {
        await held;
        await route.continue();
      });
      await p.reload();
      await p.waitForSelector("#session-state");
      expect(await p.locator("#session-input").count()).toBe(0);
      release();
      await p.waitForSelector("#session-input");
      expect(await p.textContent("#session-transcript")).toContain("You said: kept for later");
    } finally {
      await context.close();
    }
  });

  it("loaded nothing from anywhere but the worker", () => {
    expect(requested.length).toBeGreaterThan(0);
    expect(
      requested.filter((url) => !url.startsWith(rt.url.replace(/^http/, "http")) && !url.startsWith(rt.url.replace(/^http/, "ws")) && !url.startsWith("blob:")),
    ).toEqual([]);
    expect(requested.some((url) => /\/assets\/dashboard\.[A-Z0-9]{8}\.js$/.test(url))).toBe(true);
  });

  it("lets an admin connect a machine, issue a token shown once, revoke it, and read the audit log", async () => {
    expect(await page.textContent("#whoami")).toBe("deployment token (admin)");
    await open(page, "/machines", "#connect-new");
    await page.click("#connect-new"); // from the machines view to the admin's form
    await page.waitForURL(`${rt.url}/admin?connect=1`);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("connect-machine");
    await page.fill("#connect-machine", "new-laptop");
    await page.click("#connect-form button[type=submit]");
    await page.waitForSelector("#connect-out:not([hidden])");
    expect(await page.textContent("#connect-command")).toMatch(
      /^echo 'mt2\.new-laptop\.1\.0\.[A-Za-z0-9_-]+' \| npx -y --package='http:\/\/127\.0\.0\.1:\d+\/v1\/sidecar\/agent-runtime-sidecar-[\d.]+\.tgz' agent-runtime-sidecar login --url 'http:\/\/127\.0\.0\.1:\d+' --machine 'new-laptop' && npx -y --package='[^']+' agent-runtime-sidecar connect$/,
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

  it("lets an admin set the team's agents, and shows each machine applying them", async () => {
    await open(page, "/team/agents", "#agents-add");
    await page.click("#agents-add");
    await page.fill('#entry-editor [name="agent"]', "mock");
    await page.fill('#entry-editor [name="env"]', "MOCK_FROM_DASHBOARD=1");
    await page.click('#entry-editor button[type="submit"]');
    await page.waitForSelector('#agents-entries [data-entry="mock"]');
    expect(await page.textContent('#agents-entries [data-entry="mock"]')).toContain("mock latest with MOCK_FROM_DASHBOARD");
    await page.click("#agents-save");
    await expect.poll(() => page.textContent("#agents-msg")).toContain("Saved (version");
    const etag = (await rt.api("/v1/config/agents")).headers.get("etag");
    expect(await (await rt.api("/v1/config/agents")).json()).toEqual({ agents: { mock: { version: "latest", env: { MOCK_FROM_DASHBOARD: "1" } } } });
    await waitFor(async () => {
      const status = (await (await rt.api("/v1/config/agents/status")).json()) as {
        machines: { machine: string; version: string; agents?: Record<string, { installedVersion: string | null }> }[];
      };
      return status.machines.some((m) => m.machine === "local" && m.version === etag && m.agents?.mock?.installedVersion);
    }, "local to apply the team's agents and report mock's version");
    await open(page, "/team/agents", "#agents-status tr");
    expect(await page.textContent("#agents-status")).toContain("mock 1.0.0");
    // A secret is refused beside its field, before anything is sent…
    await page.click('#agents-entries [data-entry="mock"] button:has-text("Edit")');
    await page.fill('#entry-editor [name="env"]', "MOCK_API_KEY=x");
    await page.click('#entry-editor button[type="submit"]');
    await expect.poll(() => page.textContent('#entry-editor [data-field="env"] .field-error')).toContain("looks like a secret");
    await page.click('#entry-editor button:has-text("Cancel")');
    // …and typed as JSON, the worker refuses it with the reason, and nothing changes.
    await page.click("#agents-json summary");
    await page.fill("#agents", JSON.stringify({ agents: { mock: { env: { MOCK_API_KEY: "x" } } } }));
    await page.click("#agents-save");
    await expect.poll(() => page.textContent("#agents-msg")).toContain("looks like a secret");
    // The problem's `errors` name the entry: its reason is said on it too.
    expect(await page.textContent('#agents-entries [data-entry="mock"] .error')).toContain("looks like a secret");
    expect((await rt.api("/v1/config/agents")).headers.get("etag")).toBe(etag);
  });

  it("keeps an entry added to a team document while its save is on its way, saved next over that save's version only", async () => {
    const addServer = async (name: string) => {
      await page.click("#mcp-add");
      await page.fill('#entry-editor [name="name"]', name);
      await page.fill('#entry-editor [name="command"]', "npx");
      await page.click('#entry-editor button[type="submit"]');
      await page.waitForSelector(`#mcp-entries [data-entry="${name}"]`);
    };
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let releaseRead = () => {};
    const readHeld = new Promise<void>((resolve) => (releaseRead = resolve));
    let asked = 0;
    let holdReads = false;
    let readsHeld = 0;
    const mcp = (url: URL) => url.pathname === "/v1/config/mcp";
    await page.route(mcp, async (route) => {
      if (route.request().method() === "PUT") {
        asked++;
        await held;
      } else if (holdReads) {
        readsHeld++;
        await readHeld;
      }
      await route.continue();
    });
    const servers = async () => Object.keys(((await (await rt.api("/v1/config/mcp")).json()) as { servers: object }).servers);
    try {
      await open(page, "/team/mcp", "#mcp-add:not([disabled])");
      await addServer("first");
      await page.click("#mcp-save");
      await expect.poll(() => asked).toBe(1);
      await addServer("second");
      holdReads = true;
      release();
      await expect.poll(() => page.textContent("#mcp-msg")).toContain("Saved (version");
      expect(await servers()).toEqual(["first"]);
      expect(await page.locator('#mcp-entries [data-entry="second"]').count()).toBe(1);
      // The page reads the document back after its save; another admin saves before that read answers.
      await expect.poll(() => readsHeld).toBeGreaterThan(0);
      const other = await rt.api("/v1/config/mcp", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ servers: { first: { type: "local", command: "npx" }, theirs: { type: "local", command: "npx" } } }),
      });
      expect(other.status).toBe(200);
      // The page has the read-back (theirs, with its ETag) before the next save is clicked.
      const readBack = page.waitForResponse((r) => new URL(r.url()).pathname === "/v1/config/mcp" && r.request().method() === "GET");
      releaseRead();
      await readBack;
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0))));
      // The kept entry builds on the page's own save, not on the version read after it: a 412, not theirs replaced.
      await page.click("#mcp-save:not([disabled])");
      await expect.poll(() => page.textContent("#mcp-msg")).toContain("Someone saved a newer version meanwhile");
      expect(await servers()).toEqual(["first", "theirs"]);
      // Discarded, the page shows theirs; an entry added now goes over theirs.
      await page.click("#mcp-section button:text('Discard changes')");
      await page.waitForSelector('#mcp-entries [data-entry="theirs"]');
      await addServer("second");
      await page.click("#mcp-save:not([disabled])");
      await expect.poll(servers).toEqual(["first", "theirs", "second"]);
    } finally {
      release();
      releaseRead();
      await page.unroute(mcp);
      await rt.api("/v1/config/mcp", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ servers: {} }) });
    }
  });

  it("keeps what a team document's save wrote on screen until it is read back, and builds an entry added meanwhile on it", async () => {
    const mcp = (url: URL) => url.pathname === "/v1/config/mcp";
    const servers = async () => Object.keys(((await (await rt.api("/v1/config/mcp")).json()) as { servers: object }).servers);
    await open(page, "/team/mcp", "#mcp-add:not([disabled])");
    const reads = await holdRequests(page, mcp, "GET");
    try {
      await page.click("#mcp-add");
      await page.fill('#entry-editor [name="name"]', "saved");
      await page.fill('#entry-editor [name="command"]', "npx");
      await page.click('#entry-editor button[type="submit"]');
      await page.click("#mcp-save");
      await expect.poll(() => page.textContent("#mcp-msg")).toContain("Saved (version");
      await expect.poll(() => reads.asked).toBe(1); // the read-back, held
      expect(await servers()).toEqual(["saved"]);
      expect(await page.locator('#mcp-entries [data-entry="saved"]').count()).toBe(1);
      await page.click("#mcp-add");
      await page.fill('#entry-editor [name="name"]', "added");
      await page.fill('#entry-editor [name="command"]', "npx");
      await page.click('#entry-editor button[type="submit"]');
      const readBack = page.waitForResponse((r) => mcp(new URL(r.url())) && r.request().method() === "GET");
      reads.release();
      await readBack;
    } finally {
      await reads.stop();
    }
    try {
      await page.click("#mcp-save:not([disabled])");
      await expect.poll(servers).toEqual(["saved", "added"]);
    } finally {
      await rt.api("/v1/config/mcp", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ servers: {} }) });
    }
  });

  it("puts a prompt that could not be sent back in the box, and says so", async () => {
    const { id } = await sessionWithOneTurn("put-back", "before");
    const prompts = (url: URL) => url.pathname === `/v1/sessions/${id}/prompt`;
    let failed = 0;
    await page.route(prompts, async (route) => {
      failed++;
      await route.abort("internetdisconnected");
    });
    try {
      await open(page, `/sessions/${id}`, "#session-input:not([disabled])");
      await page.fill("#session-input", "a prompt the network lost");
      await page.click("#session-send");
      await expect.poll(() => page.textContent("#session-msg")).toContain("it may not have reached the machine; it is back in the box");
      expect(failed).toBe(1);
      expect(await page.inputValue("#session-input")).toBe("a prompt the network lost");
    } finally {
      await page.unroute(prompts);
    }
    // Refused by the API (a 4xx), it was not sent, and the page says so.
    await page.route(prompts, (route) =>
      route.fulfill({
        status: 409,
        contentType: "application/problem+json",
        body: JSON.stringify({ type: "about:blank", title: "Conflict", status: 409, detail: "refused for the test" }),
      }),
    );
    try {
      await page.click("#session-send");
      await expect.poll(() => page.textContent("#session-msg")).toContain("not sent, it is back in the box");
      expect(await page.inputValue("#session-input")).toBe("a prompt the network lost");
    } finally {
      await page.unroute(prompts);
    }
    // Sent again, it goes (once).
    await page.click("#session-send");
    await expect.poll(() => page.textContent("#session-transcript")).toContain("You said: a prompt the network lost");
    expect(await page.inputValue("#session-input")).toBe("");
  });

  it("lets an admin write the permission policy as a list of rules on a phone, and try a request against it", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 });
    const p = await context.newPage();
    try {
      await signIn(p, rt.token);
      await open(p, "/team", "#policy-add");
      await p.click("#policy-add");
      await p.fill('#rule-editor [name="name"]', "no rm");
      await p.selectOption('#rule-editor [name="decision"]', "deny");
      await p.check('#rule-editor [name="kinds"][value="execute"]');
      await p.fill('#rule-editor [name="commands"]', "rm *");
      await p.click('#rule-editor button[type="submit"]');
      await p.click("#policy-add");
      await p.fill('#rule-editor [name="name"]', "reads here");
      await p.selectOption('#rule-editor [name="decision"]', "allow");
      await p.check('#rule-editor [name="kinds"][value="read"]');
      await p.selectOption('#rule-editor [name="outsideFolder"]', "inside");
      await p.click('#rule-editor button[type="submit"]');
      // The second rule goes first; the tester judges the rules on screen before they are saved.
      await p.click('button[aria-label="Move rule 2 up"]');
      expect(await p.locator("#policy-rules li strong").allTextContents()).toEqual(["reads here", "no rm"]);
      await p.click("#policy-tester summary");
      await p.selectOption('#policy-tester [name="kind"]', "execute");
      await p.fill('#policy-tester [name="command"]', "cd /tmp && rm -rf ~");
      await p.click("#policy-test");
      await expect.poll(() => p.textContent("#policy-verdict")).toBe("deny by no rm");
      await fits(p, 390, true);
      // The save's answer is held while the person adds a rule: the rule added stays, to be saved next.
      const saves = await holdRequests(p, (url) => url.pathname === "/v1/config/policy", "PUT");
      try {
        await p.click("#policy-save");
        await expect.poll(() => saves.asked).toBe(1);
        await p.click("#policy-add");
        await p.fill('#rule-editor [name="name"]', "added while saving");
        await p.selectOption('#rule-editor [name="decision"]', "ask");
        await p.click('#rule-editor button[type="submit"]');
        saves.release();
        await expect.poll(() => p.textContent("#policy-msg")).toContain("saved as version");
      } finally {
        await saves.stop();
      }
      expect(await (await rt.api("/v1/config/policy")).json()).toEqual({
        rules: [
          { name: "reads here", match: { kinds: ["read"], outsideFolder: false }, decision: "allow" },
          { name: "no rm", match: { kinds: ["execute"], commands: ["rm *"] }, decision: "deny" },
        ],
      });
      expect(await p.locator("#policy-rules li strong").allTextContents()).toEqual(["reads here", "no rm", "added while saving"]);
      // Saved next, over the version just written.
      const isStatus = (res: { url(): string }) => new URL(res.url()).pathname === "/v1/config/policy/status";
      const readBack = p.waitForResponse(isStatus); // the page reads the policy back, then the machines' versions
      await p.click("#policy-save:not([disabled])");
      await expect.poll(async () => ((await (await rt.api("/v1/config/policy")).json()) as { rules: unknown[] }).rules.length).toBe(3);
      await readBack;
      // A poll on its way when the person adds a rule does not take the rule away; the machines' versions it reads still show.
      const reads = await holdRequests(p, (url) => url.pathname === "/v1/config/policy", "GET");
      try {
        await p.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
        await expect.poll(() => reads.asked).toBe(1);
        await p.click("#policy-add");
        await p.fill('#rule-editor [name="name"]', "added while reading");
        await p.selectOption('#rule-editor [name="decision"]', "ask");
        await p.click('#rule-editor button[type="submit"]');
        const status = p.waitForResponse(isStatus);
        reads.release();
        await status;
      } finally {
        await reads.stop();
      }
      expect(await p.locator("#policy-rules li strong").allTextContents()).toEqual(["reads here", "no rm", "added while saving", "added while reading"]);
      expect(await p.isEnabled("#policy-save")).toBe(true);
    } finally {
      await context.close();
      await rt.api("/v1/config/policy", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ rules: [] }) });
    }
  });

  it("starts a task on a phone, shows it to its end with its result and opens its session; repeats one on a schedule, pauses and deletes it; shows a GitHub trigger", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 });
    const p = await context.newPage();
    try {
      await signIn(p, rt.token);
      await open(p, "/tasks", "#new-task");
      await p.click("#new-task summary");
      await p.selectOption('#new-task [name="agent"]', "mock");
      await p.fill('#new-task [name="cwd"]', rt.dir);
      await p.fill('#new-task [name="prompt"]', "/write dash-task.txt from a task");
      await p.click("#task-start");
      await p.waitForSelector('#tasks tr[data-state="succeeded"]');
      expect(await p.textContent('#tasks tr[data-state="succeeded"]')).toContain("Wrote dash-task.txt · 1 file, +1 −0");
      await fits(p, 390, true);
      await p.click('#tasks tr[data-state="succeeded"] a');
      await p.waitForSelector("#session-view");
      await expect.poll(() => p.textContent("#session-transcript")).toContain("Wrote dash-task.txt");

      // The same form repeats a task on a schedule; a GitHub trigger made with the API shows where GitHub sends.
      const trigger = await rt.api("/v1/triggers", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          kind: "github",
          secret: "a-long-enough-secret",
          events: [{ on: "issues.labeled", label: "agent" }],
          task: { machine: "local", agent: "mock", cwd: rt.dir, prompt: "Fix {{title}}" },
        }),
      });
      expect(trigger.status).toBe(201);
      await open(p, "/tasks", "#new-task");
      await p.click("#new-task summary");
      await p.selectOption('#new-task [name="agent"]', "mock");
      await p.fill('#new-task [name="cwd"]', rt.dir);
      await p.fill('#new-task [name="prompt"]', "nightly");
      await p.check('#new-task [name="repeat"]');
      await p.fill('#new-task [name="cron"]', "30 2 * * *");
      await p.fill('#new-task [name="timezone"]', "UTC");
      // Each answer is held while the person types on: what they typed stays, only the prompt sent is emptied.
      const waiting: (() => void)[] = [];
      const schedules = (url: URL) => url.pathname === "/v1/schedules";
      await context.route(schedules, async (route) => {
        if (route.request().method() === "POST") await new Promise<void>((resolve) => waiting.push(resolve));
        await route.continue();
      });
      try {
        await p.click("#task-start");
        await expect.poll(() => waiting.length).toBe(1);
        await p.fill('#new-task [name="cwd"]', join(rt.dir, "the-next-one"));
        // A second schedule started while the first is on its way: each, answered, shows in the list at once.
        await p.fill('#new-task [name="prompt"]', "weekly");
        await p.fill('#new-task [name="cron"]', "0 3 * * 1");
        await p.click("#task-start");
        await expect.poll(() => waiting.length).toBe(2);
        waiting[0]!();
        await expect.poll(() => p.textContent("#new-task-msg")).toContain("scheduled: next run");
        await p.waitForSelector("#schedules tr[data-schedule]");
        expect(await p.textContent("#schedules")).toContain("30 2 * * * (UTC)");
        waiting[1]!();
        await expect.poll(() => p.locator("#schedules tr[data-schedule]").count()).toBe(2);
        expect(await p.textContent("#schedules")).toContain("0 3 * * 1 (UTC)");
        expect(await p.inputValue('#new-task [name="cwd"]')).toBe(join(rt.dir, "the-next-one"));
        expect(await p.inputValue('#new-task [name="prompt"]')).toBe("");
      } finally {
        for (const release of waiting) release();
        await context.unroute(schedules);
      }
      expect(await p.textContent("#triggers")).toContain("/github");
      await fits(p, 390, true);
      const nightly = p.locator('#schedules tr[data-schedule]:has-text("30 2 * * *")');
      await nightly.locator('button:has-text("Pause")').click();
      await expect.poll(() => nightly.textContent()).toContain("paused");
      for (const left of [1, 0]) {
        await p.locator('#schedules tr[data-schedule] button:has-text("Delete")').first().click();
        await expect.poll(() => p.locator("#schedules tr[data-schedule]").count()).toBe(left);
      }
      await p.click('#triggers tr[data-trigger] button:has-text("Delete")');
      await expect.poll(async () => ((await (await rt.api("/v1/schedules")).json()) as { schedules: unknown[] }).schedules.length).toBe(0);
    } finally {
      await context.close();
    }
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
      await signIn(viewerPage, token);
      await viewerPage.waitForSelector("#sessions-list");
      expect(await viewerPage.textContent("#whoami")).toBe("viewer-vera (viewer)");
      // No admin view, no way to start a session, change the team's documents, or connect a machine.
      expect(await viewerPage.locator('nav [data-view="admin"]').count()).toBe(0);
      expect(await viewerPage.locator("#new-session").count()).toBe(0);
      await open(viewerPage, "/machines", '[data-machine="local"]');
      expect(await viewerPage.locator("#connect-new").count()).toBe(0);
      for (const kind of ["skills", "mcp", "agents"]) {
        await open(viewerPage, `/team/${kind}`, `#${kind}-entries`);
        for (const hidden of [`#${kind}-save`, `#${kind}-add`, `#${kind}-entries button`]) expect(await viewerPage.locator(hidden).count(), hidden).toBe(0);
        expect(await viewerPage.getAttribute(`#${kind}`, "readonly")).not.toBeNull();
      }
      await open(viewerPage, "/admin", "main");
      expect(await viewerPage.textContent("main")).toContain("Only an admin");
      // A machine's views: no button to install, start, attach, stop or upload, and no terminal tab.
      await open(viewerPage, "/machines/local/agents", 'tr[data-agent="mock"]');
      expect(await viewerPage.locator("[data-install]").count()).toBe(0);
      expect(await viewerPage.locator('[data-tab="terminal"]').count()).toBe(0);
      await open(viewerPage, "/machines/local/processes", "#processes tr");
      for (const hidden of ["#proc-form", "[data-attach]", "[data-kill]"]) expect(await viewerPage.locator(hidden).count(), hidden).toBe(0);
      expect(await viewerPage.locator('#servers button:text("Stop")').count()).toBe(0);
      await open(viewerPage, "/machines/local/files", "#files tr");
      expect(await viewerPage.locator("#files-upload").count()).toBe(0);
    } finally {
      await viewerPage.close();
    }
  });
  it("shows a session offline as soon as its machine goes, queues what is sent meanwhile, and sends it when the machine is back", async () => {
    const { id } = await sessionWithOneTurn("away-and-back", "before");
    await open(page, `/sessions/${id}`, "#session-input");
    await expect.poll(() => page.textContent("#session-state")).toBe("idle");
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await expect.poll(() => page.textContent("#session-state")).toBe("offline");
    await page.fill("#session-input", "sent while away");
    await page.click("#session-send");
    await expect.poll(() => page.textContent("#session-offline")).toContain("goes to the agent, in order, when local is back");
    await page.waitForSelector("#session-queued [data-queued]");
    await rt.addSidecar("local");
    await expect.poll(() => page.textContent("#session-transcript"), { timeout: 20_000 }).toContain("You said: sent while away");
    await expect.poll(() => page.locator("#session-queued").count()).toBe(0);
    await expect.poll(() => page.textContent("#session-state")).toBe("idle");
  });
});
