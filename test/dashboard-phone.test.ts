/**
 * The dashboard on a phone (390×844, Debian's Chromium) telling the truth: a live diff drawn inside the
 * transcript, machine presence and ports that follow the live stream, offline and queued said once, revert
 * that asks and a page that follows, a commit that lists what it takes. Each view touched is checked by axe.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { accessible, fits, launchChromium } from "./browser";
import { startRuntime, waitFor, type Runtime } from "./harness";

/** Screenshots of the dashboard as a person sees it, kept as test output (git-ignored). */
const SCREENSHOTS = join(fileURLToPath(new URL("..", import.meta.url)), "test-output", "dashboard");
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

let rt: Runtime;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  rt = await startRuntime({ machines: ["local"] });
  browser = await launchChromium();
  context = await browser.newContext(PHONE);
  page = await context.newPage();
  page.on("pageerror", (e) => console.error("the page threw:", e.stack));
  await signIn(page);
});

afterAll(async () => {
  await browser?.close();
  await rt?.dispose();
});

async function signIn(p: Page): Promise<void> {
  p.setDefaultTimeout(15_000);
  await p.goto(`${rt.url}/`);
  await p.fill("#token", rt.token);
  await p.click("#login-form button[type=submit]");
  await p.waitForSelector('nav [data-view="sessions"]');
}

async function open(p: Page, path: string, ready: string): Promise<void> {
  await p.goto(`${rt.url}${path}`);
  await p.waitForSelector(ready);
}

const shot = (p: Page, name: string) => p.screenshot({ path: join(SCREENSHOTS, `phone-${name}.png`), fullPage: true });

/** A git repository with one commit, in the runtime's folder. */
function repository(name: string): { dir: string; git: (...args: string[]) => string } {
  const dir = join(rt.dir, name);
  mkdirSync(dir);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Test Person");
  git("config", "user.email", "person@example.com");
  writeFileSync(join(dir, "app.js"), "let a = 1;\n");
  git("add", ".");
  git("commit", "-q", "-m", "start");
  return { dir, git };
}

/** A mock agent's session in `cwd` (its own ACP server), and its record's id. */
async function mockSession(serverId: string, cwd: string): Promise<{ id: string; say: (text: string) => Promise<Response> }> {
  let n = 1;
  const post = (method: string, params: unknown, query = "") => rpc(rt, serverId, { jsonrpc: "2.0", id: n++, method, params }, query);
  await post("initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
  const { result } = (await (await post("session/new", { cwd, mcpServers: [] })).json()) as { result: { sessionId: string } };
  const { id } = await waitFor(async () => {
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    return sessions.find((s) => s.sessionId === result.sessionId);
  }, "the session's record");
  return { id, say: (text) => post("session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text }] }) };
}

describe("the dashboard on a phone", () => {
  it("draws a live diff right: a new file is added, its path is the session's, and nothing leaves the transcript", async () => {
    const { dir } = repository("live-diff");
    const { id } = await mockSession("live-diff", dir);
    await open(page, `/sessions/${id}`, "#session-input:not([disabled])");
    await page.fill("#session-input", "/write notes.md remember the milk");
    await page.click("#session-send");
    await page.waitForSelector(".live-edit .diff .d2h-code-line");
    await shot(page, "live-diff");
    expect((await page.textContent(".live-edit .d2h-tag"))?.trim()).toBe("ADDED");
    expect((await page.textContent(".live-edit .d2h-file-name"))?.trim()).toBe("notes.md");
    // One added line is a few lines high, not a screenful.
    expect((await page.locator(".live-edit").boundingBox())!.height).toBeLessThan(160);
    // Scrolled to its end, nothing inside the transcript is drawn below its edge (over the prompt box).
    const escaping = await page.evaluate(() => {
      const box = document.querySelector<HTMLElement>("#session-transcript")!;
      box.scrollTop = box.scrollHeight;
      const edge = box.getBoundingClientRect().bottom;
      return [...box.querySelectorAll<HTMLElement>("*")]
        .filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().bottom > edge + 1)
        .map((el) => `${el.tagName}.${el.className} ${Math.round(el.getBoundingClientRect().bottom - edge)} px below`);
    });
    expect(escaping).toEqual([]);
    await fits(page, 390, true);
    await accessible(page);
  });

  it("opens one live stream per tab, whatever the view", async () => {
    const p = await context.newPage();
    try {
      // Counted where the page calls fetch, as it calls it: two streams opened together are both counted.
      await p.addInitScript(() => {
        const counted = window as unknown as { streamsOpened: number };
        counted.streamsOpened = 0;
        const original = window.fetch.bind(window);
        window.fetch = (input, init) => {
          if (String(input instanceof Request ? input.url : input).includes("/v1/sessions/events")) counted.streamsOpened++;
          return original(input, init);
        };
      });
      const opened = p.waitForResponse((r) => r.url().includes("/v1/sessions/events"));
      await open(p, "/sessions", "#sessions-list");
      await opened;
      for (const [path, ready] of [
        ["/machines", "#machines"],
        ["/sessions", "#sessions-list"],
      ] as const) {
        await p.click(`nav [href="${path}"]`);
        await p.waitForSelector(ready);
      }
      expect(await p.evaluate(() => (window as unknown as { streamsOpened: number }).streamsOpened)).toBe(1);
    } finally {
      await p.close();
    }
  });

  it("shows a machine's presence within 3 s of its sidecar dying and coming back, on the list and its own page", async () => {
    await rt.addSidecar("laptop");
    await open(page, "/machines", '[data-machine="laptop"] .dot.on');
    let t0 = Date.now();
    await rt.sidecars.get("laptop")!.stop("SIGKILL");
    // Drawn whether it holds or not: the screenshot shows what a person saw 3 s after.
    const shown = await page.waitForSelector('[data-machine="laptop"] .dot:not(.on)', { timeout: 3000 }).then(
      () => true,
      () => false,
    );
    const went = Date.now() - t0;
    await shot(page, "machines-sidecar-died");
    expect(shown).toBe(true);
    expect(await page.textContent('[data-machine="laptop"]')).toContain("offline");
    await accessible(page);
    // Away and back through the views: still the truth.
    await page.click('nav [data-view="sessions"]');
    await page.waitForSelector("#sessions-list");
    await page.click('nav [data-view="machines"]');
    expect(await page.textContent('[data-machine="laptop"]')).toContain("offline");
    // Its own page while it is away, then back: the header and the tab agree.
    await page.click('[data-machine="laptop"]');
    await page.waitForSelector('[data-machine-view="laptop"]');
    t0 = Date.now();
    await rt.addSidecar("laptop");
    await page.waitForSelector('[data-machine-view="laptop"] h2 .dot.on', { timeout: 3000 });
    const came = Date.now() - t0;
    await page.waitForSelector('tr[data-agent="mock"]');
    expect(await page.textContent("#machine-view")).not.toContain("not connected");
    console.log(`laptop shown offline ${went} ms after its sidecar died, connected ${came} ms after it was back`);
  });

  it("lists a port within 3 s of an app listening and drops it within 3 s of it closing; a session's app line goes with its machine", async () => {
    const read = page.waitForResponse((r) => /\/v1\/ports$/.test(new URL(r.url()).pathname));
    await open(page, "/machines/local/ports", "#ports-tab");
    await read;
    // An app starts listening just after the page read the ports: it shows without waiting for the next read.
    const app = createServer();
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    const port = (app.address() as { port: number }).port;
    let t0 = Date.now();
    await page.waitForSelector(`#ports-list [data-port="${port}"]`, { timeout: 3000 });
    const appeared = Date.now() - t0;
    console.log(`port shown ${appeared} ms after it listened`);

    // A second app, read by the page before the machine's once-a-second watch saw it (the person came back to
    // the tab): it closes at once, and goes from the page all the same (port-watch.ts, `shown`).
    const brief = createServer();
    await new Promise<void>((resolve) => brief.listen(0, "127.0.0.1", resolve));
    const briefPort = (brief.address() as { port: number }).port;
    await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
    await page.waitForSelector(`#ports-list [data-port="${briefPort}"]`, { timeout: 3000 });
    for (const server of [app, brief]) await new Promise((resolve) => server.close(resolve));
    t0 = Date.now();
    await page.waitForSelector(`#ports-list [data-port="${briefPort}"]`, { state: "detached", timeout: 3000 });
    await page.waitForSelector(`#ports-list [data-port="${port}"]`, { state: "detached", timeout: 3000 });
    console.log(`closed ports gone ${Date.now() - t0} ms after they closed`);

    // A session's "listening on" line goes when its app stops, and while its machine is away.
    const { id, say } = await mockSession("session-ports", rt.dir);
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const served = (free.address() as { port: number }).port;
    await new Promise((resolve) => free.close(resolve));
    await open(page, `/sessions/${id}`, "#session-input");
    await say(`/serve ${served}`);
    await page.waitForSelector(`#session-ports [data-open="${served}"], #session-ports :text(":${served}")`);
    // While its machine is away, the app cannot be opened: the line goes with it, and comes back with it.
    const { ports } = (await (await rt.api("/v1/ports")).json()) as { ports: { port: number; pid: number | null }[] };
    const pid = ports.find((p) => p.port === served)?.pid;
    t0 = Date.now();
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await page.waitForSelector("#session-ports", { state: "detached", timeout: 3000 });
    console.log(`a session's app line gone ${Date.now() - t0} ms after its machine went`);
    if (typeof pid === "number") process.kill(pid, "SIGKILL"); // the agent's app, left behind by the killed sidecar
    await rt.addSidecar("local");
  });

  it("says once what offline means and what happens to what is sent, and clears it when it no longer holds", async () => {
    const { id } = await mockSession("away", rt.dir);
    await open(page, `/sessions/${id}`, "#session-input:not([disabled])");
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await page.waitForSelector("#session-offline");
    expect(await page.textContent("#session-offline")).toContain("local is offline");
    await page.fill("#session-input", "sent while away");
    await page.click("#session-send");
    await page.waitForSelector("#session-queued [data-queued]");
    // Outside the transcript (its history), the page says it once.
    const outside = () =>
      page.evaluate(() => {
        const view = document.querySelector("#session-view")!.cloneNode(true) as HTMLElement;
        view.querySelector("#session-transcript")?.remove();
        return view.textContent ?? "";
      });
    expect((await outside()).match(/is back/g)).toHaveLength(1);
    expect((await page.textContent("#session-msg"))?.trim()).toBe("");
    await shot(page, "session-offline");
    await accessible(page);
    await fits(page, 390, true);
    await rt.addSidecar("local");
    await expect.poll(() => page.textContent("#session-transcript"), { timeout: 20_000 }).toContain("You said: sent while away");
    await page.waitForSelector("#session-offline", { state: "detached" });
    await page.waitForSelector("#session-queued", { state: "detached" });
    expect(await outside()).not.toMatch(/is back|Queued|offline/);
  });

  it("asks before a revert with what will change, then follows it; a commit lists what it takes and says git's refusals with what to do", async () => {
    const { dir, git } = repository("ship");
    writeFileSync(join(dir, "stray.txt"), "not the session's\n");
    const { id, say } = await mockSession("ship", dir);
    await say("/write app.js let a = 2;");
    await say("/write notes/todo.md remember the milk");
    await open(page, `/sessions/${id}/changes?turn=2`, '#changes-files li[data-path="notes/todo.md"]');
    await expect.poll(() => page.textContent("#git-status")).toContain("3 uncommitted files");

    // Revert asks first, saying what it does; nothing is touched until it is confirmed.
    await page.click("#changes-revert");
    await page.waitForSelector("#changes-revert-confirm");
    expect(await page.textContent("#changes-revert-confirm")).toContain("notes/todo.md: removed");
    expect(existsSync(join(dir, "notes/todo.md"))).toBe(true);
    await accessible(page);
    await page.click("#changes-revert-yes");
    await page.waitForSelector("#changes-reverted");
    expect(existsSync(join(dir, "notes/todo.md"))).toBe(false);
    // The page follows: no second revert offered, and the git status read again.
    expect(await page.locator("#changes-revert").count()).toBe(0);
    await expect.poll(() => page.textContent("#git-status")).toContain("2 uncommitted files");

    // The commit lists the files: the session's chosen, the stray one not; the message says what changed.
    expect(await page.isChecked('#commit-files [data-path="app.js"] input')).toBe(true);
    expect(await page.isChecked('#commit-files [data-path="stray.txt"] input')).toBe(false);
    expect(await page.inputValue("#commit-message")).toBe("Change app.js");
    // No remote: no Push, no pull request, and why.
    expect(await page.locator("#git-push, #git-pr").count()).toBe(0);
    await page.waitForSelector("#git-no-remote");
    await fits(page, 390, true);
    await accessible(page);
    await shot(page, "ship");
    await page.click("#git-commit");
    await expect.poll(() => page.textContent("#ship-msg")).toContain("Committed");
    expect(git("log", "-1", "--format=%s").trim()).toBe("Change app.js");
    expect(git("status", "--porcelain").trim()).toBe("?? stray.txt");

    // With a remote that refuses, git's words show as an error, with what to do.
    git("remote", "add", "origin", join(rt.dir, "no-such-remote"));
    await open(page, `/sessions/${id}/changes`, "#git-push");
    await page.click("#git-push");
    await page.waitForSelector("#ship-msg.error");
    const said = await page.textContent("#ship-msg");
    expect(said).toContain("does not appear to be a git repository");
    expect(said).toContain("git remote add");
    await shot(page, "ship-refused");

    // A push takes no message: what was written for the next commit stays through it.
    const bare = join(rt.dir, "ship-remote.git");
    git("init", "-q", "--bare", bare);
    git("remote", "set-url", "origin", bare);
    await page.fill("#commit-message", "Words for the next commit");
    await page.click("#git-push");
    await expect.poll(() => page.textContent("#ship-msg")).toContain("Pushed");
    await page.waitForSelector("#git-push:not([disabled])");
    expect(await page.inputValue("#commit-message")).toBe("Words for the next commit");
  });

  it("starts a task from what the machine has: its installed agents, its recent folders, and why it cannot start before it is queued", async () => {
    const folder = join(rt.dir, "task-folder");
    mkdirSync(folder);
    await mockSession("task-folder", folder);
    await open(page, "/tasks", "#new-task");
    expect((await page.locator("#new-task summary").boundingBox())!.height).toBeGreaterThanOrEqual(44);
    await page.click("#new-task summary");
    await page.selectOption('#new-task [name="machine"]', "local");
    await expect
      .poll(() => page.locator('#new-task [name="agent"] option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)))
      .toContain("mock");
    const offered = await page.locator('#new-task [name="agent"] option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(offered).not.toContain("claude"); // not installed on local: offered to install instead
    await expect.poll(() => page.locator("#task-install option").evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toContain("claude");
    // The folders of the machine's recent sessions, one tap each.
    await page.click('#task-recent-folders button:has-text("task-folder")');
    expect(await page.inputValue('#new-task [name="cwd"]')).toBe(folder);
    await fits(page, 390, true);
    await accessible(page);
    await shot(page, "task-form");
    // A machine that is away, of which no agent is known: said before anything is queued, and Start waits.
    await rt.sidecars.get("laptop")!.stop("SIGKILL");
    await page.waitForSelector('#new-task [name="machine"] option[value="laptop"]:has-text("away")', { state: "attached" });
    await page.selectOption('#new-task [name="machine"]', "laptop");
    await expect.poll(() => page.textContent("#task-blocker")).toContain("laptop is away");
    expect(await page.isDisabled("#task-start")).toBe(true);
    // On local, with mock, it starts and runs (no "install first" after Start said "started").
    await page.selectOption('#new-task [name="machine"]', "local");
    await page.selectOption('#new-task [name="agent"]', "mock");
    await page.fill('#new-task [name="prompt"]', "/write from-task.txt done");
    await page.click("#task-start");
    await expect.poll(() => page.textContent("#new-task-msg")).toContain("started");
    await page.waitForSelector('#tasks [data-state="succeeded"]', { timeout: 30_000 });
  });

  it("speaks a developer's words and gives a thumb its targets: names, a machine's tabs in one row, files as lines, ports linked to their session", async () => {
    const jargon = /API_TOKEN|the sidecar's|proc_\d|POST \/v1|version "/;
    await open(page, "/machines/local/agents", 'nav.tabs [data-tab="ports"]');
    expect(await page.textContent("#whoami")).toContain("deployment token");
    // The header's first row keeps Sign out; the views' names are whole words.
    const header = await page.evaluate(() => ({
      signOut: Math.round(document.querySelector("#logout")!.getBoundingClientRect().top),
      title: Math.round(document.querySelector("header h1")!.getBoundingClientRect().top),
      wrapped: [...document.querySelectorAll("nav.main a")].filter((a) => {
        const range = document.createRange();
        range.selectNodeContents(a.firstChild!);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
      }).length,
    }));
    await shot(page, "header");
    expect(header.signOut).toBeLessThan(header.title + 20);
    expect(header.wrapped).toBe(0);
    // The five tabs in one row.
    const tops = await page.locator("nav.tabs a").evaluateAll((as) => as.map((a) => Math.round(a.getBoundingClientRect().top)));
    expect(new Set(tops).size).toBe(1);

    // Files: a line each (at least seven on a screen), the upload field inside its card.
    const folder = join(rt.dir, "many-files");
    mkdirSync(folder);
    for (let i = 0; i < 8; i++) writeFileSync(join(folder, `file-${i}.txt`), "x".repeat(i * 100));
    await open(page, `/machines/local/files?path=${encodeURIComponent(folder)}`, '#files [data-entry="file-7.txt"]');
    const heights = await page.locator("#files > tr").evaluateAll((rows) => rows.map((r) => r.getBoundingClientRect().height));
    expect(Math.max(...heights)).toBeLessThanOrEqual(844 / 7);
    const upload = await page.evaluate(() => {
      const input = document.querySelector("#files-upload")!.getBoundingClientRect();
      const card = document.querySelector("#files-view")!.getBoundingClientRect();
      return { input: input.right, card: card.right };
    });
    expect(upload.input).toBeLessThanOrEqual(upload.card);
    await fits(page, 390, true);
    await accessible(page);
    await shot(page, "files");

    // Ports: what listens by its program's name, an agent's app linked to its session.
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const port = (free.address() as { port: number }).port;
    await new Promise((resolve) => free.close(resolve));
    const { id, say } = await mockSession("words", rt.dir);
    await say(`/serve ${port}`);
    await open(page, "/machines/local/ports", `#ports-list [data-port="${port}"]`);
    await page.waitForSelector(`#ports-list [data-port="${port}"] a[href="/sessions/${id}"]`);
    expect(await page.textContent(`#ports-list [data-port="${port}"]`)).not.toContain("require(");
    await fits(page, 390, true);
    await accessible(page);
    await shot(page, "ports");
    // Checkbox words beside their boxes, disclosures a thumb's size, and no API words on the views.
    await open(page, "/tasks", "#new-task");
    await page.click("#new-task summary");
    for (const box of await page.locator("#new-task label.check").all()) expect((await box.boundingBox())!.height).toBeLessThan(60);
    for (const [path, ready] of [
      ["/tasks", "#new-task"],
      ["/team/skills", "#skills-section"],
      [`/sessions/${id}`, "#session-meta"],
      ["/machines/local/ports", "#ports-list"],
    ] as const) {
      await open(page, path, ready);
      expect(await page.textContent("body"), path).not.toMatch(jargon);
      for (const summary of await page.locator("summary").all()) expect((await summary.boundingBox())!.height, path).toBeGreaterThanOrEqual(44);
    }
  });

  it("edits the team's documents with forms, not JSON, and keeps the policy one tap from the navigation", async () => {
    // The policy: one tap on Team, at the top of what shows, not below the documents.
    await open(page, "/sessions", "#sessions-list");
    await page.click('nav [data-view="team"]');
    await page.waitForSelector("#policy-section h2");
    expect((await page.locator("#policy-section h2").first().boundingBox())!.y).toBeLessThan(844 / 2);
    await fits(page, 390, true);
    await accessible(page);
    await shot(page, "team-policy");

    // An MCP server through its form: a mistake is said beside its field, nothing saved until it is right.
    await page.click('#team-view nav.tabs [data-tab="mcp"]');
    await page.click("#mcp-add");
    await page.fill('#entry-editor [name="name"]', "git hub");
    await page.fill('#entry-editor [name="command"]', "npx");
    await page.fill('#entry-editor [name="args"]', "-y\n@modelcontextprotocol/server-github");
    await page.fill('#entry-editor [name="env"]', "LOG_LEVEL=debug");
    await page.click('#entry-editor button[type="submit"]');
    const error = page.locator('#entry-editor [data-field="name"] .field-error');
    await error.waitFor();
    expect(await error.textContent()).toContain("letters, digits");
    const [field, said] = [await page.locator('#entry-editor [name="name"]').boundingBox(), await error.boundingBox()];
    expect(said!.y - (field!.y + field!.height)).toBeLessThan(30); // right under the field it is about
    expect(await page.getAttribute('#entry-editor [name="name"]', "aria-invalid")).toBe("true");
    await accessible(page);
    await page.fill('#entry-editor [name="name"]', "github");
    await page.click('#entry-editor button[type="submit"]');
    await page.waitForSelector('#mcp-entries [data-entry="github"]');
    await page.click("#mcp-save");
    await expect.poll(() => page.textContent("#mcp-msg")).toContain("Saved (version");
    expect(await (await rt.api("/v1/config/mcp")).json()).toEqual({
      servers: { github: { type: "local", command: "npx", args: ["-y", "@modelcontextprotocol/server-github"], env: { LOG_LEVEL: "debug" } } },
    });
    // The JSON, one tap away, says the same.
    await page.click("#mcp-json summary");
    expect(JSON.parse(await page.inputValue("#mcp"))).toEqual(await (await rt.api("/v1/config/mcp")).json());
    await fits(page, 390, true);
    await accessible(page);
    await shot(page, "team");

    // A skill source, the same way; its save carries the version read, so a save over a newer one is refused.
    await page.click('#team-view nav.tabs [data-tab="skills"]');
    await page.click("#skills-add");
    await page.selectOption('#entry-editor [name="type"]', "github");
    await page.fill('#entry-editor [name="source"]', "acme/team-skills");
    await page.fill('#entry-editor [name="skills"]', "pdf, review");
    await page.click('#entry-editor button[type="submit"]');
    await page.waitForSelector('#skills-entries [data-entry="0"]');
    const meanwhile = await rt.api("/v1/config/skills", {
      method: "PUT",
      body: JSON.stringify({ sources: [] }),
      headers: { "content-type": "application/json" },
    });
    expect(meanwhile.status).toBe(200);
    await page.click("#skills-save");
    await expect.poll(() => page.textContent("#skills-msg")).toContain("Someone saved a newer version");
    await page.click('#skills-section button:has-text("Discard changes")');
    await page.waitForSelector("#skills-entries li.muted");
    await page.click("#skills-add");
    await page.fill('#entry-editor [name="source"]', "acme/team-skills");
    await page.fill('#entry-editor [name="skills"]', "pdf, review");
    await page.click('#entry-editor button[type="submit"]');
    await page.click("#skills-save");
    await expect.poll(() => page.textContent("#skills-msg")).toContain("Saved (version");
    expect(await (await rt.api("/v1/config/skills")).json()).toEqual({ sources: [{ type: "github", source: "acme/team-skills", skills: ["pdf", "review"] }] });
    await fits(page, 390, true);
    await accessible(page);
    // Every target on the Team view is a thumb's.
    for (const tab of ["policy", "skills", "mcp", "agents", "notifications"]) {
      await page.click(`#team-view nav.tabs [data-tab="${tab}"]`);
      await page.waitForSelector(`#team-view nav.tabs [data-tab="${tab}"].selected`);
      await page.waitForSelector(tab === "notifications" ? "#notifications" : `#${tab}-section`);
      const small = await page
        .locator("#team-view button:visible, #team-view summary:visible, #team-view nav.tabs a")
        .evaluateAll((els) => els.filter((el) => el.getBoundingClientRect().height < 44).map((el) => el.outerHTML.slice(0, 80)));
      expect(small, tab).toEqual([]);
    }
    expect(await page.locator("#team-view nav.tabs a").evaluateAll((as) => new Set(as.map((a) => Math.round(a.getBoundingClientRect().top))).size)).toBe(1);

    // Out of reach: what was read stays on the page, said to be the last read, until the service answers again.
    await page.click('#team-view nav.tabs [data-tab="mcp"]');
    await page.waitForSelector('#mcp-entries [data-entry="github"]');
    await context.setOffline(true);
    try {
      await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
      await expect
        .poll(() =>
          page
            .locator("#mcp-load")
            .textContent()
            .catch(() => ""),
        )
        .toContain("Cannot reach the service");
      expect(await page.locator('#mcp-entries [data-entry="github"]').count()).toBe(1);
    } finally {
      await context.setOffline(false);
    }
    await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
    await page.waitForSelector("#mcp-load", { state: "detached" });
  });

  /** Machine `desk`, its sidecar running (started again when a test before killed it). */
  const deskUp = async () => {
    const desk = rt.sidecars.get("desk");
    if (desk && desk.child.exitCode === null && desk.child.signalCode === null) return desk;
    return rt.addSidecar("desk");
  };

  it("says a machine's tab is offline instead of an earlier message, offers nothing on its old rows, and forgets what it said when it is back", async () => {
    await deskUp();
    await open(page, "/machines/desk/processes", "#proc-form");
    await page.waitForSelector("#machine-view h2 .dot.on");
    await page.fill("#proc-command", "sleep 300");
    await page.click("#proc-form button[type=submit]");
    await expect.poll(() => page.textContent("#proc-msg")).toMatch(/^started /);
    await page.waitForSelector("[data-kill]");
    await rt.sidecars.get("desk")!.stop("SIGKILL");
    await page.waitForSelector("#machine-view h2 .dot:not(.on)");
    // The rows stay (as last read, and said so), with no Stop that could not reach the machine.
    await expect.poll(() => page.textContent("#proc-msg")).toContain("(shown: the list as last read)");
    expect(await page.textContent("#proc-msg")).not.toContain("started");
    expect(await page.textContent("#processes")).toContain("sleep 300");
    expect(await page.locator("[data-kill]").count()).toBe(0);
    await accessible(page);
    await deskUp(); // its leftovers (the sleep) are stopped by the sidecar that comes back

    // The agents tab: "installed" said before, then the machine goes: its Install buttons go with it.
    await open(page, "/machines/desk/agents", '[data-install="mock"]');
    await page.waitForSelector("#machine-view h2 .dot.on");
    await page.click('[data-install="mock"]');
    await expect.poll(() => page.textContent("#agents-note")).toContain("mock: already installed");
    await rt.sidecars.get("desk")!.stop("SIGKILL");
    await page.waitForSelector("#machine-view h2 .dot:not(.on)");
    await expect.poll(() => page.textContent("#agents-note")).toContain("(shown: the list as last read)");
    expect(await page.textContent("#agents-note")).not.toContain("installed");
    expect(await page.locator('tr[data-agent="mock"]').count()).toBe(1);
    expect(await page.locator("[data-install]").count()).toBe(0);
    await shot(page, "agents-machine-offline");
    // Back: read again, offered again, and nothing said that held only before it went.
    await deskUp();
    await page.waitForSelector("#machine-view h2 .dot.on");
    await page.waitForSelector('[data-install="mock"]');
    await expect.poll(async () => (await page.textContent("#agents-note"))?.trim()).toBe("");
  });

  it("redials a dropped terminal as soon as its machine is back, not at the end of its wait; a freshly attached one is not dialed again", {
    timeout: 90_000,
  }, async () => {
    await deskUp();
    const dials: string[] = [];
    const onSocket = (ws: { url(): string }) => {
      if (ws.url().includes("/terminal/ws")) dials.push(ws.url());
    };
    page.on("websocket", onSocket);
    try {
      await open(page, "/machines/desk/terminal", "#term-open");
      await page.click("#term-open");
      await expect.poll(() => page.textContent("#term-state")).toMatch(/attached to/);
      // A reload attaches again while the header learns the machine's presence: one dial, not a second for it.
      dials.length = 0;
      await page.reload();
      await expect.poll(() => page.textContent("#term-state")).toMatch(/attached to/);
      await page.waitForSelector("#machine-view h2 .dot.on");
      // The presence arrived with the terminal attached. A second dial would come from the effects of that
      // render: let them run (Preact runs them after the next frame) and their sockets be reported.
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0)))));
      expect(dials).toHaveLength(1);

      await rt.sidecars.get("desk")!.stop("SIGKILL");
      await page.waitForSelector("#machine-view h2 .dot:not(.on)");
      // Each dial while it is away fails, and the wait doubles (1, 2, 4, 8 s): then the machine is back.
      await expect.poll(() => page.textContent("#term-state"), { timeout: 40_000 }).toContain("reconnecting in 16 s");
      const waitStarted = Date.now();
      const before = dials.length;
      const t0 = Date.now();
      await deskUp();
      await page.waitForSelector("#machine-view h2 .dot.on");
      // Dialed when the header turned green, not 16 s after the last failure: the dial must come before the
      // terminal's own wait would have ended, or this proves nothing.
      await expect.poll(() => dials.length, { timeout: 8000 }).toBeGreaterThan(before);
      expect(Date.now() - waitStarted).toBeLessThan(14_000); // a margin for when the wait was seen to start
      console.log(`terminal dialed again ${Date.now() - t0} ms after its machine's sidecar was started again (its own wait: 16 s)`);
    } finally {
      page.off("websocket", onSocket);
    }
  });
});
