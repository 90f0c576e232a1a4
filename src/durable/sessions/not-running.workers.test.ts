/**
 * "Not running" as `acp.post`'s typed result (packages/protocol/src/ops/acp.ts, `AcpNotRunning`), as the
 * fake sidecar answers it: a message for a session recorded on the server brings its agent back first
 * (`acp.restore`, then the message again); any other message is refused with the problem clients always
 * got (400, `notRunning`).
 */
import { SELF, env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { AcpNotRunning } from "@agent-runtime/protocol/ops/acp";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";

const api = (path: string, init: RequestInit = {}) =>
  SELF.fetch(`https://runtime.test${path}`, {
    ...init,
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json", accept: "application/json", ...(init.headers ?? {}) },
  });

const sidecars: FakeSidecar[] = [];
afterEach(() => {
  for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
});

const notRunning = (serverId: string): AcpNotRunning => ({
  status: 404,
  notRunning: true,
  detail: `server '${serverId}' is not running: the first POST must name its agent with ?agent=<id>`,
});

describe("an agent that is not running", () => {
  it("is started again for a recorded session's message, and otherwise refused as before", async () => {
    const machine = "not-running-laptop";
    const sidecar = await FakeSidecar.connect(machine, "boot-1");
    sidecars.push(sidecar);
    const post = (serverId: string, body: unknown, query = "") =>
      api(`/machines/${machine}/v1/acp/${serverId}${query}`, { method: "POST", body: JSON.stringify(body) });

    // A message for a server no session was recorded on: the client hears the problem it always did.
    const stray = post("s9", { jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: "acp-9", prompt: [] } });
    const strayCall = await sidecar.call("acp.post");
    sidecar.answer(strayCall, notRunning("s9"));
    const refused = await stray;
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ detail: notRunning("s9").detail, notRunning: true });

    // A recorded session: initialize and session/new, then its agent is gone.
    const initializing = post("s1", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    sidecar.answer(await sidecar.call("acp.post"), {
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, agentCapabilities: { loadSession: true } } }),
    });
    expect((await initializing).status).toBe(200);
    const starting = post("s1", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/home/me/app", mcpServers: [] } });
    sidecar.answer(await sidecar.call("acp.post"), { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 2, result: { sessionId: "acp-1" } }) });
    expect((await starting).status).toBe(200);

    const prompting = post("s1", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: "acp-1", prompt: [{ type: "text", text: "again" }] },
    });
    sidecar.answer(await sidecar.call("acp.post"), notRunning("s1"));
    const restore = await sidecar.call("acp.restore");
    expect(restore.args).toMatchObject({ serverId: "s1", agent: "mock" });
    expect(restore.args.sessions.map((s) => s.sessionId)).toEqual(["acp-1"]);
    sidecar.answer(restore, { started: true, sessions: [{ sessionId: "acp-1", how: "load" }] });
    const resent = await sidecar.call("acp.post");
    expect(resent.args.method).toBe("session/prompt");
    sidecar.answer(resent, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" } }) });
    expect((await prompting).status).toBe(200);
  });
});
