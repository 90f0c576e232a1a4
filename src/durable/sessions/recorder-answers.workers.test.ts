/**
 * What the session recorder reads of the agent's answers (docs/architecture.md, "Sessions"): an answer to
 * `initialize` sets what the server's agent can do, again each time it says something else (the recorder
 * keeps the last parse per server and reuses it only for the same result), and an answer to a request the
 * recorder does not keep changes no record.
 */
import { SELF, env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";

const sidecars: FakeSidecar[] = [];

afterEach(() => {
  for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
});

function api(machine: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${env.API_TOKEN}`);
  return SELF.fetch(`https://runtime.test/machines/${machine}/v1${path}`, { ...init, headers });
}

describe("the recorder's reading of answers", () => {
  it("learns an agent's capabilities from each initialize whose result changed, and ignores answers it does not keep", async () => {
    const sidecar = await FakeSidecar.connect("answers");
    sidecars.push(sidecar);
    const relay = async (id: number, method: string, params: unknown, result: unknown, query = "") => {
      const posting = api("answers", `/acp/s1${query}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      });
      const call = await sidecar.call("acp.post");
      sidecar.answer(call, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id, result }) });
      expect((await posting).status).toBe(200);
    };
    /** A new session opened now: the record takes what the server's agent can do as the recorder knows it. */
    let next = 100;
    const opened = async () => {
      const id = `acp-${next}`;
      await relay(next++, "session/new", { cwd: "/home/me", mcpServers: [] }, { sessionId: id });
      const { sessions } = (await (await api("answers", "/sessions")).json()) as {
        sessions: { sessionId: string; resumable: boolean; agentVersion: string | null }[];
      };
      return sessions.find((s) => s.sessionId === id);
    };
    const cannot = { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "a", version: "1.0" } };
    const can = { protocolVersion: 1, agentCapabilities: { loadSession: true }, agentInfo: { name: "a", version: "2.0" } };
    const init = { protocolVersion: 1, clientCapabilities: {} };

    await relay(1, "initialize", init, cannot, "?agent=mock");
    expect(await opened()).toMatchObject({ resumable: false, agentVersion: "1.0" });
    // The same result under another id (a client initializing again): nothing changes.
    await relay(3, "initialize", init, cannot);
    expect(await opened()).toMatchObject({ resumable: false, agentVersion: "1.0" });
    // Another result on the same server: read, not taken from the last one.
    await relay(4, "initialize", init, can);
    expect(await opened()).toMatchObject({ resumable: true, agentVersion: "2.0" });
    await relay(5, "initialize", init, cannot);
    expect(await opened()).toMatchObject({ resumable: false, agentVersion: "1.0" });
    // An answer to a request the recorder does not keep, with a result that would look like a session.
    const { sessions: before } = (await (await api("answers", "/sessions")).json()) as { sessions: unknown[] };
    await relay(6, "session/set_mode", { sessionId: "acp-100", modeId: "x" }, { sessionId: "acp-other" });
    const { sessions: after } = (await (await api("answers", "/sessions")).json()) as { sessions: unknown[] };
    expect(after).toHaveLength(before.length);
  });
});
