/**
 * The sidecar on Node 22, the other release users run (the tests' own Node is 20, the real agents run on
 * 24): it joins, relays an agent's turn and records it as a session, runs a shell on a PTY (the native
 * terminal library loads), and moves a file of several pieces both ways, byte for byte.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRuntime, waitFor, type Runtime } from "./harness";
import { ensureNode, NODE_RELEASES } from "./node-releases";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ sidecarNode: await ensureNode(22) });
}, 60_000);
afterAll(async () => {
  await rt?.dispose();
});

function post(path: string, body: unknown): Promise<Response> {
  return rt.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

it("runs its sidecar on Node 22", async () => {
  const { machines } = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; platform: string; connected: boolean }[] };
  expect(machines.find((m) => m.id === "local")).toMatchObject({ connected: true, platform: expect.stringContaining(`node-v${NODE_RELEASES[22]}`) });
});

it("relays an agent's turn and records it as a session", async () => {
  const acp = (id: number, method: string, params: unknown, query = "") => post(`/v1/acp/on-22${query}`, { jsonrpc: "2.0", id, method, params });
  expect((await acp(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock")).status).toBe(200);
  const created = (await (await acp(2, "session/new", { cwd: rt.dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
  const prompted = await acp(3, "session/prompt", { sessionId: created.result.sessionId, prompt: [{ type: "text", text: "hello from Node 22" }] });
  expect(((await prompted.json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
  const session = await waitFor(async () => {
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { sessionId: string; state: string; title: string | null }[] };
    return sessions.find((s) => s.sessionId === created.result.sessionId && s.state === "idle");
  }, "the session recorded as idle");
  expect(session.title).toBe("hello from Node 22");
  expect((await rt.api("/v1/acp/on-22", { method: "DELETE" })).status).toBe(204);
});

it("runs a shell on a PTY and streams its output to a terminal viewer", async () => {
  const spawned = await post("/v1/processes", { command: "sh", tty: true, interactive: true, env: { PS1: "$ " } });
  expect(spawned.status).toBe(201);
  const { id } = (await spawned.json()) as { id: string };
  const ws = new WebSocket(`${rt.url.replace(/^http/, "ws")}/v1/processes/${id}/terminal/ws`, { headers: { authorization: `Bearer ${rt.token}` } });
  let output = "";
  let ready = false;
  ws.on("message", (data, isBinary) => {
    if (isBinary) output += Buffer.from(data as Buffer).toString("utf8");
    else if ((JSON.parse(String(data)) as { type: string }).type === "ready") ready = true;
  });
  await waitFor(async () => ready, "the terminal to be ready");
  ws.send(JSON.stringify({ type: "input", data: "echo node-$((20+2))\n" }));
  await waitFor(async () => output.includes("node-22"), `the shell's echo (got ${JSON.stringify(output)})`);
  ws.close();
  expect((await rt.api(`/v1/processes/${id}/kill`, { method: "POST" })).status).toBe(200);
});

it("writes and reads back a file of several pieces, byte for byte", async () => {
  const bytes = randomBytes(3 * 1024 * 1024 + 4_321);
  const path = join(rt.dir, "on-22", "blob.bin");
  const written = await rt.api(`/v1/fs/file?path=${encodeURIComponent(path)}`, {
    method: "PUT",
    headers: { "content-type": "application/octet-stream" },
    body: bytes,
  });
  expect(written.status).toBe(200);
  expect(readFileSync(path).equals(bytes)).toBe(true);
  const read = await rt.api(`/v1/fs/file?path=${encodeURIComponent(path)}`);
  expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);
});
