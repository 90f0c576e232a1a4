/**
 * The ACP relay end to end: HTTP client → worker (workerd) → tunnel → sidecar → mock agent process.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AcpHttpClient } from "acp-http-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";
import { openSession, readSse, rpc, streamed } from "./acp-helpers";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
});
afterAll(async () => {
  await rt?.dispose();
});

type Update = { sessionUpdate: string; content?: { text?: string }; status?: string };

describe("a whole session with acp-http-client (a client written by others, unchanged)", () => {
  it("initialize → session/new → streamed prompt → permission → fs read → cancel → disconnect", async () => {
    const updates: Update[] = [];
    const permissionAsks: string[] = [];
    const filePath = join(rt.dir, "notes.txt");
    await writeFile(filePath, "remember the milk");
    const client = new AcpHttpClient({
      baseUrl: `${rt.url}/machines/local`,
      token: rt.token,
      transport: { path: "/v1/acp/http-client-session", bootstrapQuery: { agent: "mock" } },
      client: {
        sessionUpdate: async (n) => void updates.push(n.update as Update),
        requestPermission: async (req) => {
          permissionAsks.push(req.toolCall.title ?? "");
          return { outcome: { outcome: "selected", optionId: "allow" } };
        },
        readTextFile: async (req) => ({ content: req.path === filePath ? "remember the milk" : "?" }),
      },
    });

    const init = await client.initialize();
    expect(init.agentInfo?.name).toBe("mock");
    const { sessionId } = await client.newSession({ cwd: rt.dir, mcpServers: [] });
    expect(sessionId).toMatch(/^mock-[0-9a-f-]{36}$/);

    // A prompt's answer streams as several chunks, all delivered before the prompt's response is used.
    const prompt = await client.prompt({ sessionId, prompt: [{ type: "text", text: "hello relay" }] });
    expect(prompt.stopReason).toBe("end_turn");
    await waitFor(async () => text(updates) === "You said: hello relay", "the streamed answer");
    expect(updates.filter((u) => u.sessionUpdate === "agent_message_chunk").length).toBeGreaterThan(1);

    // The agent asks for permission over the SSE stream; the client's answer is POSTed back.
    updates.length = 0;
    expect((await client.prompt({ sessionId, prompt: [{ type: "text", text: "/permission" }] })).stopReason).toBe("end_turn");
    expect(permissionAsks).toEqual(["Write hello.txt"]);
    await waitFor(async () => text(updates).includes("Permission granted"), "the permission outcome");
    expect(updates.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed")).toBe(true);

    // The agent reads a file through the client (fs/read_text_file round trip).
    updates.length = 0;
    await client.prompt({ sessionId, prompt: [{ type: "text", text: `/read ${filePath}` }] });
    await waitFor(async () => text(updates) === `Read ${filePath}: remember the milk`, "the file contents");

    // session/cancel ends a long turn with stopReason "cancelled".
    const slow = client.prompt({ sessionId, prompt: [{ type: "text", text: "/slow 100 50" }] });
    await waitFor(async () => text(updates).includes("tick 2"), "the slow turn to start");
    await client.cancel({ sessionId });
    expect((await slow).stopReason).toBe("cancelled");

    // Disconnect deletes the server: its process exits and shows so in /v1/processes.
    await client.disconnect();
    const list = (await (await rt.api("/v1/acp")).json()) as { servers: { serverId: string }[] };
    expect(list.servers.map((s) => s.serverId)).not.toContain("http-client-session");
    const processes = (await (await rt.api("/v1/processes")).json()) as { processes: { label?: string; status: string; owner: string }[] };
    const agentProcess = processes.processes.find((p) => p.label === "acp:http-client-session");
    expect(agentProcess).toMatchObject({ status: "exited", owner: "system" });
  });
});

function text(updates: Update[]): string {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => u.content?.text ?? "")
    .join("");
}

describe("statuses of POST /v1/acp/{server_id}", () => {
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } };

  it("400 when the first POST does not name an agent", async () => {
    const res = await rpc(rt, "no-agent-yet", init);
    expect(res.status).toBe(400);
    expect((await problemOf(res)).detail).toContain("?agent=");
  });

  it("400 unsupported_agent for an unknown agent", async () => {
    const res = await rpc(rt, "bad-agent", init, "?agent=gpt-17");
    expect(res.status).toBe(400);
    expect(errorCode(await problemOf(res))).toBe("unsupported_agent");
  });

  it("404 agent_not_installed for an agent that is not installed (no install on demand)", async () => {
    const res = await rpc(rt, "not-installed", init, "?agent=codex");
    expect(res.status).toBe(404);
    expect(errorCode(await problemOf(res))).toBe("agent_not_installed");
  });

  it("409 when a server id already runs another agent", async () => {
    expect((await rpc(rt, "taken", init, "?agent=mock")).status).toBe(200);
    const res = await rpc(rt, "taken", { ...init, id: 2 }, "?agent=claude");
    expect(res.status).toBe(409);
    expect(errorCode(await problemOf(res))).toBe("conflict");
  });

  it("406 when Accept does not allow JSON, 415 when the body is not JSON", async () => {
    const notAcceptable = await rpc(rt, "neg", init, "?agent=mock", { accept: "text/html" });
    expect(notAcceptable.status).toBe(406);
    expect(errorCode(await problemOf(notAcceptable))).toBe("not_acceptable");
    const wrongType = await rt.api("/v1/acp/neg?agent=mock", { method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify(init) });
    expect(wrongType.status).toBe(415);
    expect(errorCode(await problemOf(wrongType))).toBe("unsupported_media_type");
  });

  it("400 naming the field for a message that is not JSON-RPC", async () => {
    const res = await rpc(rt, "shape", { jsonrpc: "1.0", id: 1, method: "x" }, "?agent=mock");
    expect(res.status).toBe(400);
    expect((await problemOf(res)).detail).toContain("jsonrpc");
  });

  it("202 with an empty body for a notification and for a response", async () => {
    expect((await rpc(rt, "notes", init, "?agent=mock")).status).toBe(200);
    const note = await rpc(rt, "notes", { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "none" } });
    expect(note.status).toBe(202);
    expect(await note.text()).toBe("");
    const reply = await rpc(rt, "notes", { jsonrpc: "2.0", id: 99, result: {} });
    expect(reply.status).toBe(202);
  });

  it("500 agent_process_exited when the agent dies before answering; the id is then free", async () => {
    expect((await rpc(rt, "dies", init, "?agent=mock")).status).toBe(200);
    const session = (await (await rpc(rt, "dies", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
      result: { sessionId: string };
    };
    const res = await rpc(rt, "dies", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: session.result.sessionId, prompt: [{ type: "text", text: "/exit 3" }] },
    });
    expect(res.status).toBe(500);
    expect(await problemOf(res)).toMatchObject({ exitCode: 3 });
    // Freed: without ?agent= it is a new server that needs one; with it, a fresh process answers.
    expect((await rpc(rt, "dies", { ...init, id: 4 })).status).toBe(400);
    expect((await rpc(rt, "dies", { ...init, id: 5 }, "?agent=mock")).status).toBe(200);
    await rt.api("/v1/acp/dies", { method: "DELETE" });
  });

  it("504 when the agent does not answer within ACP_TIMEOUT_MS", async () => {
    // Long enough for a cold start on a busy machine, far shorter than the turn below (20 × 250 ms).
    const quick = await startRuntime({ machines: ["local"], vars: { ACP_TIMEOUT_MS: "2000" } });
    try {
      const sessionId = await openSession(quick, "t");
      const res = await rpc(quick, "t", {
        jsonrpc: "2.0",
        id: 3,
        method: "session/prompt",
        params: { sessionId: sessionId, prompt: [{ type: "text", text: "/slow 20 250" }] },
      });
      expect(res.status).toBe(504);
      expect(errorCode(await problemOf(res))).toBe("timeout");
      // The deadline reached the sidecar too: the id is free again, so a retry with it is not a 409.
      const retry = await rpc(quick, "t", { jsonrpc: "2.0", id: 3, method: "session/new", params: { cwd: quick.dir, mcpServers: [] } });
      expect(retry.status).toBe(200);
      expect(((await retry.json()) as { id: number }).id).toBe(3);
    } finally {
      await quick.dispose();
    }
  });

  it("DELETE is idempotent: 204 for a live server and again for a gone one", async () => {
    expect((await rpc(rt, "del", init, "?agent=mock")).status).toBe(200);
    expect((await rt.api("/v1/acp/del", { method: "DELETE" })).status).toBe(204);
    expect((await rt.api("/v1/acp/del", { method: "DELETE" })).status).toBe(204);
  });
});

describe("the SSE stream", () => {
  async function promptSession(serverId: string, promptText: string): Promise<string> {
    expect((await rpc(rt, serverId, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=mock")).status).toBe(200);
    const s = (await (await rpc(rt, serverId, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
      result: { sessionId: string };
    };
    const res = await rpc(rt, serverId, {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: s.result.sessionId, prompt: [{ type: "text", text: promptText }] },
    });
    expect(res.status).toBe(200);
    return s.result.sessionId;
  }

  it("delivers what the agent wrote while nobody was reading, in order, and resumes after Last-Event-ID", async () => {
    await promptSession("late", "abcdefghijklmnopqrstuvwxyz"); // 36 chars of answer: 5 chunks, then the turn's usage_update
    const all = await readSse(rt, "late", { until: (events) => events.length >= 6 });
    expect(all.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(
      all
        .slice(0, 5)
        .map((e) => (e.data as { params: { update: { content: { text: string } } } }).params.update.content.text)
        .join(""),
    ).toBe("You said: abcdefghijklmnopqrstuvwxyz");
    expect(all[5]!.data).toMatchObject({ params: { update: { sessionUpdate: "usage_update" } } });
    const resumed = await readSse(rt, "late", { lastEventId: 3, until: (events) => events.length >= 3 });
    expect(resumed.map((e) => e.id)).toEqual([4, 5, 6]);
  });

  it("serves several readers at once, each everything", async () => {
    const first = readSse(rt, "fanout", { until: (events) => events.length >= 6 });
    const second = readSse(rt, "fanout", { until: (events) => events.length >= 6 });
    await promptSession("fanout", "abcdefghijklmnopqrstuvwxyz");
    const [a, b] = await Promise.all([first, second]);
    expect(a.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(b).toEqual(a);
  });

  it("tells readers when the agent exits (event: end), then the id is gone (404)", async () => {
    await promptSession("ending", "bye");
    let attached!: () => void;
    const opened = new Promise<void>((resolve) => {
      attached = resolve;
    });
    // "You said: bye" is two chunks, then the turn's usage_update: three messages.
    const reading = readSse(rt, "ending", { lastEventId: 3, untilEnd: true, opened: attached });
    await opened;
    expect((await rt.api("/v1/acp/ending", { method: "DELETE" })).status).toBe(204);
    const events = await reading;
    expect(events.at(-1)).toMatchObject({ event: "end", data: { serverId: "ending", agent: "mock" } });
    const after = await rt.api("/v1/acp/ending", { headers: { accept: "text/event-stream", "last-event-id": "3" } });
    expect(after.status).toBe(404);
    await after.body?.cancel();
  });

  it("406 when the reader does not accept text/event-stream", async () => {
    const res = await rt.api("/v1/acp/any", { headers: { accept: "application/json" } });
    expect(res.status).toBe(406);
  });

  it("loses nothing when the tunnel drops in the middle of a prompt", async () => {
    const sidecar = rt.sidecars.get("local")!;
    expect((await rpc(rt, "drop", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=mock")).status).toBe(200);
    const s = (await (await rpc(rt, "drop", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
      result: { sessionId: string };
    };
    const reading = readSse(rt, "drop", { until: (events) => events.length >= 40 });
    const prompt = rpc(rt, "drop", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "/slow 40 15" }] },
    });
    await streamed(rt, "drop", 5);
    process.kill(sidecar.child.pid!, "SIGUSR2"); // cut the tunnel mid-stream
    const res = await prompt; // the POST in flight survives the drop and is answered once
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
    // The 40 ticks, in order (the turn's usage_update may follow them).
    const events = (await reading).slice(0, 40);
    expect(events.map((e) => e.id)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(events.map((e) => (e.data as { params: { update: { content: { text: string } } } }).params.update.content.text)).toEqual(
      Array.from({ length: 40 }, (_, i) => `tick ${i + 1} `),
    );
    expect(sidecar.logs()).toContain("tunnel closed");
  });
});

describe("a bounded buffer with a clear rule", () => {
  it("drops the oldest messages past the limit and tells the reader exactly which", async () => {
    const small = await startRuntime({ machines: [] });
    try {
      await small.addSidecar("local", { AGENT_RUNTIME_ACP_BUFFER_EVENTS: "10" });
      expect((await rpc(small, "tiny", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=mock")).status).toBe(200);
      const s = (await (await rpc(small, "tiny", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: small.dir, mcpServers: [] } })).json()) as {
        result: { sessionId: string };
      };
      await rpc(small, "tiny", {
        jsonrpc: "2.0",
        id: 3,
        method: "session/prompt",
        params: { sessionId: s.result.sessionId, prompt: [{ type: "text", text: "/stream 25 10" }] },
      });
      const events = await readSse(small, "tiny", { until: (evs) => evs.filter((e) => e.event === "message").length >= 10 });
      // 25 messages and the turn's usage_update: the buffer of 10 holds 17 to 26.
      expect(events[0]).toMatchObject({ event: "error", data: { type: "urn:agent-runtime:error:stream_error", dropped: { from: 1, to: 16 } } });
      expect(events.filter((e) => e.event === "message").map((e) => e.id)).toEqual(Array.from({ length: 10 }, (_, i) => i + 17));
    } finally {
      await small.dispose();
    }
  });
});

describe("a message larger than the tunnel carries", () => {
  it("becomes an error event for that stream; the tunnel stays up and the turn ends", async () => {
    const sessionId = await openSession(rt, "huge");
    const reconnectsBefore = rt.sidecars.get("local")!.logs().split("tunnel closed").length;
    const reading = readSse(rt, "huge", {
      until: (events) => events.some((e) => e.event === "error") && events.filter((e) => e.event === "message").length >= 3,
      timeoutMs: 30_000,
    });
    const turn = await rpc(rt, "huge", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: sessionId, prompt: [{ type: "text", text: "/stream 1 9000000" }] },
    });
    expect(turn.status).toBe(200);
    expect(((await turn.json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
    const after = await rpc(rt, "huge", {
      jsonrpc: "2.0",
      id: 4,
      method: "session/prompt",
      params: { sessionId: sessionId, prompt: [{ type: "text", text: "still here" }] },
    });
    expect(after.status).toBe(200);
    const events = await reading;
    const error = events.find((e) => e.event === "error")!.data as { type: string; detail: string };
    expect(error.type).toBe("urn:agent-runtime:error:stream_error");
    expect(error.detail).toContain("larger than the tunnel carries");
    expect(rt.sidecars.get("local")!.logs().split("tunnel closed").length).toBe(reconnectsBefore);
    await rt.api("/v1/acp/huge", { method: "DELETE" });
  });
});
