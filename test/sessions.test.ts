/**
 * Sessions that survive being away (docs/architecture.md, "Sessions"): records and transcripts kept by
 * the machine's object, readable while the machine is offline; the same server id and sessionId answered
 * after the sidecar was killed and came back (the agent started again and the session reattached);
 * 409 and `continue` for an agent that cannot reattach; sessions the agent keeps itself; idle agents.
 */
import { AcpHttpClient } from "acp-http-client";
import { afterEach, describe, expect, it } from "vitest";
import { readSse, rpc } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

type Update = { sessionUpdate: string; content?: { type: string; text?: string } };
type Session = {
  id: string;
  sessionId: string;
  machine: string;
  agent: string;
  serverId: string;
  cwd: string;
  title: string | null;
  state: string;
  createdBy: string;
  pending: { requestId: string | number; title: string; options: { optionId: string }[] } | null;
  failure: { message: string } | null;
  resumable: boolean;
  continuedFrom: string | null;
  agentVersion: string | null;
};
type Entry = { seq: number; kind: string; text?: string; data?: Record<string, unknown> };

const textOf = (updates: Update[]) =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => u.content?.text ?? "")
    .join("");

function client(rt: Runtime, serverId: string, updates: Update[], agent = "mock") {
  return new AcpHttpClient({
    baseUrl: `${rt.url}/machines/local`,
    token: rt.token,
    transport: { path: `/v1/acp/${serverId}`, bootstrapQuery: { agent } },
    client: {
      sessionUpdate: async (n) => void updates.push(n.update as Update),
      requestPermission: async () => ({ outcome: { outcome: "selected", optionId: "allow" } }),
    },
  });
}

async function sessions(rt: Runtime, query = ""): Promise<{ sessions: Session[]; nextCursor: string | null; discovered?: unknown[] }> {
  const res = await rt.api(`/v1/sessions${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { sessions: Session[]; nextCursor: string | null };
}

async function transcript(rt: Runtime, id: string, query = ""): Promise<Entry[]> {
  const res = await rt.api(`/v1/sessions/${id}/transcript${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { entries: Entry[] }).entries;
}

async function recordOf(rt: Runtime, acpSessionId: string): Promise<Session> {
  return waitFor(async () => (await sessions(rt)).sessions.find((s) => s.sessionId === acpSessionId), `the record of ${acpSessionId}`);
}

describe("a session on the mock agent through a sidecar killed outright", () => {
  it("is recorded, offline with its transcript while the machine is away, and answered on the same server id and sessionId after", async () => {
    rt = await startRuntime({ machines: ["local"], vars: { RECONNECT_GRACE_MS: "1000" } });
    const updates: Update[] = [];
    const acp = client(rt, "away", updates);
    await acp.initialize();
    const { sessionId } = await acp.newSession({ cwd: rt.dir, mcpServers: [] });
    expect(sessionId).toMatch(/^mock-[0-9a-f-]{36}$/);
    expect((await acp.prompt({ sessionId, prompt: [{ type: "text", text: "first turn" }] })).stopReason).toBe("end_turn");

    const record = await recordOf(rt, sessionId);
    expect(record).toMatchObject({ machine: "local", agent: "mock", serverId: "away", cwd: rt.dir, title: "first turn", state: "idle", resumable: true });
    expect(record.id).toMatch(/^ses-[0-9a-f]{16}-local$/);
    expect(record.createdBy).toBeTruthy();
    expect(record.agentVersion).toBe("1.0.0");

    await rt.sidecars.get("local")!.stop("SIGKILL");
    await waitFor(async () => (await (await rt!.api(`/v1/sessions/${record.id}`)).json()).state === "offline", "the record to read offline");
    const offline = await transcript(rt, record.id);
    expect(offline.map((e) => e.kind)).toEqual(["prompt", "text", "stop"]);
    expect(offline[0]!.text).toBe("first turn");
    expect(offline[1]!.text).toBe("You said: first turn"); // many chunks, one entry
    expect(offline[2]!.data).toMatchObject({ stopReason: "end_turn" });

    await rt.addSidecar("local");
    updates.length = 0;
    // The same client, server id and sessionId: the relay starts the agent, reattaches, then delivers.
    expect((await acp.prompt({ sessionId, prompt: [{ type: "text", text: "/history" }] })).stopReason).toBe("end_turn");
    await waitFor(async () => textOf(updates) === "History (1): first turn", "the mock to show the history it loaded");
    const after = await transcript(rt, record.id);
    expect(after.map((e) => e.kind)).toEqual(["prompt", "text", "stop", "prompt", "text", "stop"]);
    expect(after.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await (await rt.api(`/v1/sessions/${record.id}`)).json()).state).toBe("idle");
    await acp.disconnect();
  });

  it("answers a pending permission from anywhere, lists waiting sessions, and follows the transcript live", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const init = await rpc(rt, "ask", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    expect(init.status).toBe(200);
    const created = (await (await rpc(rt, "ask", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
      result: { sessionId: string };
    };
    const sessionId = created.result.sessionId;
    const turn = rpc(rt, "ask", { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "/permission" }] } });
    const waiting = await waitFor(async () => (await sessions(rt!, "?state=waiting")).sessions[0], "the session to wait");
    expect(waiting.pending).toMatchObject({ title: "Write hello.txt", options: [{ optionId: "allow" }, { optionId: "reject" }] });

    const follow = readSse(rt, "", {
      path: `/v1/sessions/${waiting.id}/transcript`,
      until: (events) => events.some((e) => e.event === "entry" && (e.data as Entry).kind === "stop"),
    });
    // A wrong option is refused; the right one lets the turn finish; answering twice is a conflict.
    const wrong = await rt.api(`/v1/sessions/${waiting.id}/permission`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ requestId: waiting.pending!.requestId, optionId: "maybe" }),
    });
    expect(wrong.status).toBe(400);
    const answer = () =>
      rt!.api(`/v1/sessions/${waiting.id}/permission`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ requestId: waiting.pending!.requestId, optionId: "allow" }),
      });
    expect((await answer()).status).toBe(200);
    expect(((await (await turn).json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
    const again = await answer();
    expect(again.status).toBe(409);
    expect(errorCode(await problemOf(again))).toBe("conflict");

    const events = await follow;
    const entries = events.filter((e) => e.event === "entry").map((e) => e.data as Entry);
    const kinds = [...new Map(entries.map((e) => [e.seq, e.kind])).values()];
    expect(kinds).toEqual(["prompt", "tool_call", "permission", "permission_answer", "text", "stop"]);
    expect(events.some((e) => e.event === "session" && (e.data as Session).state === "waiting")).toBe(true);
    const stored = await transcript(rt, waiting.id);
    expect(stored.find((e) => e.kind === "permission_answer")!.data).toMatchObject({ optionId: "allow", outcome: "selected" });
    expect(stored.find((e) => e.kind === "tool_call")!.data).toMatchObject({ title: "Write hello.txt", status: "completed" });

    // The audit log has the answer.
    const audit = (await (await rt.api("/v1/audit?limit=50")).json()) as { entries: { route: string; status: number }[] };
    expect(audit.entries.some((e) => e.route === "/v1/sessions/{id}/permission" && e.status === 200)).toBe(true);
  });
});

describe("an agent that can neither resume nor load", () => {
  it("answers 409 session_not_resumable, and continue starts a new session primed with the conversation", async () => {
    rt = await startRuntime({ machines: [], vars: { RECONNECT_GRACE_MS: "1000" } });
    await rt.addSidecar("local", { MOCK_AGENT_NO_RESUME: "1" });
    const updates: Update[] = [];
    const acp = client(rt, "forgetful", updates);
    await acp.initialize();
    const { sessionId } = await acp.newSession({ cwd: rt.dir, mcpServers: [] });
    await acp.prompt({ sessionId, prompt: [{ type: "text", text: "the secret word is teal" }] });
    const record = await recordOf(rt, sessionId);
    expect(record.resumable).toBe(false);

    await rt.sidecars.get("local")!.stop("SIGKILL");
    await rt.addSidecar("local", { MOCK_AGENT_NO_RESUME: "1" });
    const refused = await rpc(rt, "forgetful", {
      jsonrpc: "2.0",
      id: 9,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "again" }] },
    });
    expect(refused.status).toBe(409);
    const problem = await problemOf(refused);
    expect(errorCode(problem)).toBe("session_not_resumable");
    expect(problem.session).toBe(record.id);

    const continued = await rt.api(`/v1/sessions/${record.id}/continue`, { method: "POST" });
    expect(continued.status, await continued.clone().text()).toBe(201);
    const next = (await continued.json()) as Session;
    expect(next).toMatchObject({ continuedFrom: record.id, serverId: "forgetful", cwd: rt.dir, agent: "mock" });
    expect(next.sessionId).not.toBe(sessionId);
    const answer = (await (
      await rpc(rt, "forgetful", {
        jsonrpc: "2.0",
        id: 10,
        method: "session/prompt",
        params: { sessionId: next.sessionId, prompt: [{ type: "text", text: "what was it?" }] },
      })
    ).json()) as { result: { stopReason: string } };
    expect(answer.result.stopReason).toBe("end_turn");
    const entries = await transcript(rt, next.id);
    expect(entries[0]).toMatchObject({ kind: "prompt" });
    expect(entries[0]!.text).toContain("User: the secret word is teal");
    expect(entries[0]!.text).toContain("what was it?");
  });
});

describe("sessions the agent keeps itself, idle agents, closing", () => {
  it("discovers a session started elsewhere, resumes it through the relay, stops an idle agent and resumes again", async () => {
    rt = await startRuntime({ machines: [] });
    await rt.addSidecar("local", { AGENT_IDLE_STOP_MS: "1500" });
    // A session started "at the desk": straight through the relay on one server, then its server deleted.
    const desk = client(rt, "desk", []);
    await desk.initialize();
    const { sessionId } = await desk.newSession({ cwd: rt.dir, mcpServers: [] });
    await desk.prompt({ sessionId, prompt: [{ type: "text", text: "at the desk" }] });
    await desk.disconnect();

    const found = await sessions(rt, `?machine=local&discover=true&agent=mock&cwd=${encodeURIComponent(rt.dir)}`);
    const discovered = found.discovered as { sessionId: string; cwd: string; title: string | null; recorded: string | null }[];
    expect(discovered.find((d) => d.sessionId === sessionId)).toMatchObject({ cwd: rt.dir, title: "at the desk" });

    // Resumed from elsewhere on a new server id (plain POSTs: no reader stays attached), recorded like any other.
    const post = (id: number, method: string, params: unknown, query = "") => rpc(rt!, "phone", { jsonrpc: "2.0", id, method, params }, query);
    expect((await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock")).status).toBe(200);
    expect((await post(2, "session/resume", { sessionId, cwd: rt.dir, mcpServers: [] })).status).toBe(200);
    expect((await post(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "/history" }] })).status).toBe(200);
    const record = (await sessions(rt, "?agent=mock")).sessions.find((s) => s.serverId === "phone")!;
    expect(record.sessionId).toBe(sessionId);
    expect((await transcript(rt, record.id)).find((e) => e.kind === "text")!.text).toBe("History (1): at the desk");

    // Nobody reads, no turn: the agent is stopped; the session stays and resumes on the next message.
    const agentOf = async () =>
      ((await (await rt!.api("/v1/processes")).json()) as { processes: { label?: string; status: string }[] }).processes.filter(
        (p) => p.label === "acp:phone" && p.status === "running",
      ).length;
    await waitFor(async () => (await agentOf()) === 0, "the idle agent to be stopped", 15_000);
    expect((await (await rt.api(`/v1/sessions/${record.id}`)).json()).state).toBe("idle");
    const later = (await (await post(4, "session/prompt", { sessionId, prompt: [{ type: "text", text: "/history" }] })).json()) as {
      result: { stopReason: string };
    };
    expect(later.result.stopReason).toBe("end_turn");
    expect(await agentOf()).toBe(1);
    expect((await transcript(rt, record.id)).filter((e) => e.kind === "text").at(-1)!.text).toBe("History (2): at the desk | /history");

    // Closing stops the server (no other open session on it); purge drops the transcript.
    const closed = await rt.api(`/v1/sessions/${record.id}?purge=true`, { method: "DELETE" });
    expect(closed.status).toBe(200);
    expect(((await closed.json()) as Session).state).toBe("closed");
    expect(await transcript(rt, record.id)).toEqual([]);
    await waitFor(async () => (await agentOf()) === 0, "the closed session's agent to stop");
  });

  it("shows a session only to tokens whose scope holds its machine, and lets only members act on it", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const issue = async (body: unknown) =>
      (
        (await (await rt!.api("/v1/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as {
          token: string;
        }
      ).token;
    const elsewhere = await issue({ name: "elsewhere", role: "member", machines: ["other"] });
    const viewer = await issue({ name: "watcher", role: "viewer", machines: ["local"] });
    await rpc(rt, "scoped", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    await rpc(rt, "scoped", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } });
    const [record] = (await sessions(rt)).sessions;
    const as = (token: string, path: string, init: RequestInit = {}) =>
      rt!.api(path, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } });

    expect(((await (await as(elsewhere, "/v1/sessions")).json()) as { sessions: unknown[] }).sessions).toEqual([]);
    expect((await as(elsewhere, `/v1/sessions/${record!.id}`)).status).toBe(403);
    expect((await as(elsewhere, `/v1/sessions/${record!.id}/transcript`)).status).toBe(403);
    expect((await as(elsewhere, "/v1/sessions?machine=local")).status).toBe(403);

    expect(((await (await as(viewer, "/v1/sessions")).json()) as { sessions: { id: string }[] }).sessions.map((s) => s.id)).toEqual([record!.id]);
    expect((await as(viewer, `/v1/sessions/${record!.id}/transcript`)).status).toBe(200);
    const refused = await as(viewer, `/v1/sessions/${record!.id}/continue`, { method: "POST" });
    expect(refused.status).toBe(403);
    expect(errorCode(await problemOf(refused))).toBe("permission_denied");
    expect((await as(viewer, `/v1/sessions/${record!.id}`, { method: "DELETE" })).status).toBe(403);
  });

  it("refuses what it should: bad ids, another machine's session, filters", async () => {
    rt = await startRuntime({ machines: ["local"] });
    expect((await rt.api("/v1/sessions/not-a-session")).status).toBe(400);
    expect((await rt.api("/v1/sessions/ses-0123456789abcdef-local")).status).toBe(404);
    expect((await rt.api("/v1/sessions/ses-0123456789abcdef-nowhere")).status).toBe(404);
    expect((await rt.api("/machines/local/v1/sessions/ses-0123456789abcdef-other")).status).toBe(404);
    expect((await rt.api("/v1/sessions?state=sleepy")).status).toBe(400);
    expect((await rt.api("/v1/sessions?discover=true")).status).toBe(400);
    expect(await sessions(rt)).toEqual({ sessions: [], nextCursor: null });
  });
});
