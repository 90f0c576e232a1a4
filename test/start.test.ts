/**
 * `npm start` as a person runs it: it prints its URL, its token and its sidecar's pid, and when the local
 * sidecar dies it is started again, as a service manager would, while the worker keeps running.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { freePort, ROOT } from "../dev/runtime";
import { waitFor } from "./harness";

let child: ChildProcess | null = null;
let out = "";
const stateDir = mkdtempSync(join(tmpdir(), "agent-runtime-start-"));

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(stateDir, { recursive: true, force: true });
});

it("restarts its local sidecar when it dies, and the machine answers again", async () => {
  child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "start.ts")], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(await freePort()), AGENT_RUNTIME_STATE_DIR: stateDir, AGENT_RUNTIME_SKIP_BUILD: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const started = await waitFor(
    async () => {
      const url = /^url: (\S+)$/m.exec(out)?.[1];
      const token = /^token: (\S+)$/m.exec(out)?.[1];
      const pid = /^sidecar: pid (\d+)$/m.exec(out)?.[1];
      return url && token && pid ? { url, token, pid: Number(pid) } : undefined;
    },
    "npm start's URL, token and sidecar pid",
    60_000,
  );
  process.kill(started.pid, "SIGKILL");
  const restarted = await waitFor(async () => /^sidecar: restarted, pid (\d+)$/m.exec(out)?.[1], "the sidecar restarted", 30_000);
  expect(Number(restarted)).not.toBe(started.pid);
  expect(out).toMatch(/the sidecar exited \(signal\); restarting it in 1 s/);
  // The machine answers again: one ACP turn of the mock agent.
  const rpc = async (id: number, method: string, params: unknown, query = "") =>
    (await (
      await fetch(`${started.url}/v1/acp/after-restart${query}`, {
        method: "POST",
        headers: { authorization: `Bearer ${started.token}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      })
    ).json()) as { result: Record<string, unknown> };
  await rpc(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
  const created = await rpc(2, "session/new", { cwd: stateDir, mcpServers: [] });
  const prompted = await rpc(3, "session/prompt", { sessionId: created.result.sessionId, prompt: [{ type: "text", text: "still here?" }] });
  expect(prompted.result.stopReason).toBe("end_turn");
}, 120_000);
