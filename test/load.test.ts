/**
 * Load, bounded (loopback only; a fixed number of requests; stops by itself): many clients and ACP
 * servers at once. The runtime keeps answering, memory stays bounded, and buffers obey their limits
 * with a clear error when exceeded.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, rpc } from "./acp-helpers";
import { startRuntime, type Runtime } from "./harness";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: [] });
  await rt.addSidecar("local", { AGENT_RUNTIME_ACP_BUFFER_EVENTS: "2000" });
});
afterAll(async () => {
  await rt?.dispose();
});

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

async function session(serverId: string): Promise<string> {
  expect((await rpc(rt, serverId, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=mock")).status).toBe(200);
  const res = await rpc(rt, serverId, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } });
  return ((await res.json()) as { result: { sessionId: string } }).result.sessionId;
}

describe("load", () => {
  it("answers every request of 40 concurrent clients on 10 servers, and memory stays bounded", { timeout: 120_000 }, async () => {
    const servers = Array.from({ length: 10 }, (_, i) => `load-${i}`);
    const sessions = await Promise.all(servers.map((s) => session(s)));
    const sidecarPid = rt.sidecars.get("local")!.child.pid!;
    const before = rssMb(sidecarPid);

    const statuses = new Map<number, number>();
    let nextId = 100;
    const PER_CLIENT = 40;
    await Promise.all(
      Array.from({ length: 40 }, async (_, client) => {
        const server = servers[client % servers.length]!;
        for (let i = 0; i < PER_CLIENT; i++) {
          const id = nextId++;
          const message =
            i % 10 === 9
              ? {
                  jsonrpc: "2.0",
                  id,
                  method: "session/prompt",
                  params: { sessionId: sessions[client % servers.length]!, prompt: [{ type: "text", text: "/stream 50 200" }] },
                }
              : { jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: 1 } };
          const res = await rpc(rt, server, message);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          await res.body?.cancel();
        }
      }),
    );
    expect(Object.fromEntries(statuses)).toEqual({ 200: 40 * PER_CLIENT });
    expect((await fetch(`${rt.url}/v1/health`)).status).toBe(200);
    // Every server buffered up to 2,000 messages (its limit); the sidecar's memory grows by that, not without bound.
    const after = rssMb(sidecarPid);
    expect(after - before).toBeLessThan(150);
    await Promise.all(servers.map((s) => rt.api(`/v1/acp/${s}`, { method: "DELETE" })));
  });

  it("keeps only the newest messages past the buffer limit and tells a late reader what it missed", async () => {
    const sid = await session("overflow");
    const res = await rpc(rt, "overflow", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: sid, prompt: [{ type: "text", text: "/stream 5000 100" }] },
    });
    expect(res.status).toBe(200);
    // 5000 chunks, then the turn's usage_update (message 5001): the buffer of 2000 holds 3002 to 5001.
    const events = await readSse(rt, "overflow", { until: (evs) => evs.filter((e) => e.event === "message").length >= 2000 });
    expect(events[0]).toMatchObject({ event: "error", data: { dropped: { from: 1, to: 3001 } } });
    const messages = events.filter((e) => e.event === "message");
    const ids = messages.map((e) => e.id);
    expect(ids[0]).toBe(3002);
    expect(ids.at(-1)).toBe(5001);
    expect(messages.at(-2)!.data).toMatchObject({ params: { update: { sessionUpdate: "agent_message_chunk" } } });
    expect(messages.at(-1)!.data).toMatchObject({ params: { update: { sessionUpdate: "usage_update" } } });
  });

  it("closes a reader that stops reading once it is 8 MiB behind, telling it where to resume", { timeout: 60_000 }, async () => {
    const sid = await session("slow-reader");
    const controller = new AbortController();
    const res = await rt.api("/v1/acp/slow-reader", { headers: { accept: "text/event-stream" }, signal: controller.signal });
    expect(res.status).toBe(200);
    // 40,000 messages of ~1 KB (~45 MB of SSE) while this reader reads nothing.
    const prompt = await rpc(rt, "slow-reader", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: sid, prompt: [{ type: "text", text: "/stream 40000 1000" }] },
    });
    expect(prompt.status).toBe(200);
    const text = await res.text(); // now read what was queued: it ends with the error, then the stream closes
    const lastError = text.lastIndexOf("event: error");
    expect(lastError).toBeGreaterThan(0);
    const problem = JSON.parse(text.slice(lastError).split("\n")[1]!.slice(5)) as { detail: string; lastEventId: number };
    expect(problem.detail).toContain("reconnect with Last-Event-ID");
    const lastDelivered = Number([...text.matchAll(/^id: (\d+)$/gm)].at(-1)![1]);
    expect(problem.lastEventId).toBe(lastDelivered);
    expect(lastDelivered).toBeLessThan(40_000);
    controller.abort();
  });
});
