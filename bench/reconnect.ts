/**
 * The first answer after a sidecar comes back (a laptop's sidecar killed and restarted), in `npm run bench`
 * (alone: BENCH_ONLY=reconnect). Goal: through the API and through the dashboard, at most 1 s more than the
 * agent's own resume. Each is the median of RUNS:
 *  - the agent's own resume: the mock agent started again on stdio, `initialize`, `session/load` of the
 *    session it kept on disk, one prompt answered (what any client of the agent alone would wait);
 *  - the API: the sidecar killed (SIGKILL) and started again; from its connection, one prompt to the same
 *    relay server id answered (the runtime restores the session on the new agent process first);
 *  - the dashboard: the same, from the session view in Chromium: from the page showing the machine back
 *    (`idle`) to the answer shown in its transcript, the prompt typed and sent by the page.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client as acpClient, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { chromium } from "playwright-core";
import { newSecret, ROOT, startSidecar, startWorker, type SidecarProcess } from "../dev/runtime";
import { chromiumPath, NO_CHROMIUM } from "./browser";
import { percentile } from "./proc";

export interface ReconnectFigures {
  runs: number;
  agentResumeMs: number;
  apiFirstAnswerMs: number;
  /** NaN when there was no Chromium to drive the dashboard with (bench/browser.ts). */
  dashboardFirstAnswerMs: number;
}

const RUNS = 5;
const MOCK_AGENT = join(ROOT, "sidecar", "dist", "mock-agent.js");

/** The mock agent on stdio, its sessions kept in `stateDir`. */
function agentOnStdio(stateDir: string) {
  const child = spawn(process.execPath, [MOCK_AGENT], { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, MOCK_AGENT_STATE_DIR: stateDir } });
  const stream = ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
  const connection = acpClient({ name: "bench" }).connect(stream);
  const close = () => {
    connection.close();
    child.kill();
  };
  return { child, agent: connection.agent, close };
}

async function agentResume(dir: string): Promise<number> {
  const stateDir = join(dir, "agent-alone");
  await mkdir(stateDir, { recursive: true });
  const first = agentOnStdio(stateDir);
  await first.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await first.agent.request(methods.agent.session.new, { cwd: dir, mcpServers: [] });
  await first.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "before" }] });
  first.close();
  const started = performance.now();
  const again = agentOnStdio(stateDir);
  await again.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  await again.agent.request(methods.agent.session.load, { sessionId, cwd: dir, mcpServers: [] });
  await again.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "again" }] });
  const ms = performance.now() - started;
  again.close();
  return ms;
}

export async function benchReconnect(): Promise<ReconnectFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-reconnect-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const worker = await startWorker({ secrets, vars: { DEFAULT_MACHINE: "local", ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json" } });
  const sidecarOptions = { url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir };
  let sidecar: SidecarProcess = await startSidecar(sidecarOptions);
  const executablePath = chromiumPath();
  // Without a browser the dashboard's part is left out (and reported so); the API's part runs all the same.
  const browser = executablePath ? await chromium.launch({ executablePath, args: ["--headless", "--no-sandbox", "--disable-gpu"] }) : null;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${worker.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${secrets.API_TOKEN}`, "content-type": "application/json", accept: "application/json" },
    });
  let id = 1;
  const rpc = (server: string, method: string, params: unknown, query = "") =>
    api(`/v1/acp/${server}${query}`, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: id++, method, params }) });
  /** The sidecar killed as a crash would, and started again on the same data folder; resolves once connected. */
  const restart = async () => {
    await sidecar.stop("SIGKILL");
    sidecar = await startSidecar(sidecarOptions);
    await sidecar.connected(30_000);
  };
  const agent: number[] = [];
  const viaApi: number[] = [];
  const viaDashboard: number[] = [];
  try {
    await sidecar.connected();
    const page = browser ? await browser.newPage({ viewport: { width: 390, height: 844 } }) : null;
    if (page) {
      await page.goto(`${worker.url}/`);
      await page.fill("#token", secrets.API_TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.waitForSelector('nav [data-view="sessions"]');
    }
    for (let run = 0; run < RUNS; run++) {
      agent.push(await agentResume(dir));

      const server = `reconnect-${run}`;
      await rpc(server, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
      const created = (await (await rpc(server, "session/new", { cwd: dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
      const sessionId = created.result.sessionId;
      await rpc(server, "session/prompt", { sessionId, prompt: [{ type: "text", text: "before" }] });
      await restart();
      let started = performance.now();
      const answer = (await (await rpc(server, "session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] })).json()) as { result?: unknown };
      if (!answer.result) throw new Error(`the first prompt after a reconnect failed: ${JSON.stringify(answer)}`);
      viaApi.push(performance.now() - started);
      if (!page) continue;

      const { sessions } = (await (await api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
      const record = sessions.find((s) => s.sessionId === sessionId);
      if (!record) throw new Error("the session has no record");
      await page.goto(`${worker.url}/sessions/${record.id}`);
      await page.waitForSelector("#session-input");
      await restart();
      await page.waitForFunction(() => document.querySelector("#session-state")?.textContent === "idle", undefined, { timeout: 30_000 });
      started = performance.now();
      await page.fill("#session-input", `from the page ${run}`);
      await page.click("#session-send");
      await page.waitForFunction((text) => document.querySelector("#session-transcript")?.textContent?.includes(text), `You said: from the page ${run}`, {
        timeout: 30_000,
      });
      viaDashboard.push(performance.now() - started);
    }
  } finally {
    await browser?.close();
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
  return {
    runs: RUNS,
    agentResumeMs: percentile(agent, 50),
    apiFirstAnswerMs: percentile(viaApi, 50),
    dashboardFirstAnswerMs: viaDashboard.length ? percentile(viaDashboard, 50) : Number.NaN,
  };
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : "n/a");

export function reconnectReport(f: ReconnectFigures): string {
  const within = (ms: number) => ms <= f.agentResumeMs + 1000;
  return [
    `The first answer after the sidecar came back (median of ${f.runs}):`,
    `- the agent's own resume (started again, session/load, one prompt): ${fmt(f.agentResumeMs)} ms`,
    `- through the API: ${fmt(f.apiFirstAnswerMs)} ms`,
    Number.isNaN(f.dashboardFirstAnswerMs)
      ? `- through the dashboard: ${NO_CHROMIUM}`
      : `- through the dashboard (typed and sent once the page shows the machine back): ${fmt(f.dashboardFirstAnswerMs)} ms`,
    `- ${within(f.apiFirstAnswerMs) ? "met" : "MISSED"}: through the API, ≤ 1 s more than the agent's own resume`,
    ...(Number.isNaN(f.dashboardFirstAnswerMs)
      ? []
      : [`- ${within(f.dashboardFirstAnswerMs) ? "met" : "MISSED"}: through the dashboard, ≤ 1 s more than the agent's own resume`]),
  ].join("\n");
}
