/**
 * The README tour's picture (docs/images/dashboard-phone.png): the dashboard on a phone (390×844, Debian's
 * Chromium as the browser tests drive it) against a local runtime with the mock agent, one session waiting
 * for a permission answer. Run it again after the dashboard changes how a session looks:
 * `npx tsx scripts/build.ts && npx tsx scripts/docs-screenshot.ts`.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../dev/runtime";
import { rpc } from "../test/acp-helpers";
import { launchChromium } from "../test/browser";
import { startRuntime } from "../test/harness";

const OUT = join(ROOT, "docs", "images", "dashboard-phone.png");
/** The README embeds it as is: a phone's screen at one device pixel per CSS pixel keeps the file small. */
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1 };

const rt = await startRuntime({ machines: ["local"] });
const browser = await launchChromium();
try {
  const post = (id: number, method: string, params: unknown, query = "") => rpc(rt, "tour", { jsonrpc: "2.0", id, method, params }, query);
  await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
  const created = (await (await post(2, "session/new", { cwd: rt.dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
  const sessionId = created.result.sessionId;
  await post(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] });
  const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
  const id = sessions.find((s) => s.sessionId === sessionId)!.id;
  // The agent asks (the turn stays open until the question is answered, below).
  const turn = post(4, "session/prompt", { sessionId, prompt: [{ type: "text", text: "/permission" }] });

  const page = await (await browser.newContext(PHONE)).newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${rt.url}/`);
  await page.fill("#token", rt.token);
  await page.click("#login-form button[type=submit]");
  await page.waitForSelector('nav [data-view="sessions"]');
  await page.goto(`${rt.url}/sessions/${id}`);
  await page.waitForSelector('[data-answer="allow"]');
  await page.waitForFunction(() => document.querySelector("#session-transcript")?.textContent?.includes("You said: hello"));
  await page.screenshot({ path: OUT });
  await page.click('[data-answer="allow"]');
  await turn;
  console.log(`${OUT}: ${Math.round(statSync(OUT).size / 1024)} KB`);
} finally {
  await browser.close();
  await rt.dispose();
}
