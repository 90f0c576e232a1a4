/**
 * ACP's remote transport (docs/architecture.md, "ACP's remote transport"), driven by the ACP SDK's own
 * clients, unchanged: `createHttpStream` (Streamable HTTP) and `createWebSocketStream`, each under the
 * SDK's `client()` app. Initialize, two sessions on one connection, streamed prompts with a permission,
 * cancellation both ways, passthrough of what the runtime does not know, a dropped tunnel, and a sidecar
 * restart answered 409 and reattached with session/load.
 */
import { type ClientConnection, client, methods, type SessionNotification } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
});
afterAll(async () => {
  await rt?.dispose();
});

/** One client app: what it was sent, by session, and how it answers permissions. */
function app(updates: SessionNotification[], permission: "allow" | "reject" = "allow") {
  return client()
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(methods.client.session.requestPermission, () => ({ outcome: { outcome: "selected" as const, optionId: permission } }))
    .onRequest(methods.client.fs.readTextFile, ({ params }) => ({ content: `the client's copy of ${params.path}` }));
}

const textOf = (updates: SessionNotification[], sessionId: string) =>
  updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk")
    .map((u) => (u.update.sessionUpdate === "agent_message_chunk" && u.update.content.type === "text" ? u.update.content.text : ""))
    .join("");

function overHttp(updates: SessionNotification[], query = "?agent=mock"): ClientConnection {
  const stream = createHttpStream(`${rt.url}/machines/local/acp${query}`, { headers: { authorization: `Bearer ${rt.token}` } });
  return app(updates).connect(stream);
}

function overWebSocket(updates: SessionNotification[], ticket?: string): ClientConnection {
  // A browser's WebSocket cannot send headers: it carries a one-minute ticket as ?access_token= instead.
  const url = `${rt.url.replace(/^http/, "ws")}/machines/local/acp?agent=mock${ticket ? `&access_token=${encodeURIComponent(ticket)}` : ""}`;
  const stream = createWebSocketStream(url, { WebSocket: WebSocket as never, ...(ticket ? {} : { headers: { authorization: `Bearer ${rt.token}` } }) });
  return app(updates).connect(stream);
}

async function issueToken(name: string, role: "viewer" | "member"): Promise<{ token: string }> {
  const res = await rt.api("/v1/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name, role }) });
  expect(res.status).toBe(201);
  return (await res.json()) as { token: string };
}

async function ticket(token = rt.token): Promise<string> {
  const res = await rt.api("/v1/tickets", { method: "POST", headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { ticket: string }).ticket;
}

const prompt = (conn: ClientConnection, sessionId: string, text: string, signal?: AbortSignal) =>
  conn.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }, signal ? { cancellationSignal: signal } : undefined);

async function initialize(conn: ClientConnection) {
  return conn.agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
}

async function newSession(conn: ClientConnection): Promise<string> {
  return (await conn.agent.request(methods.agent.session.new, { cwd: rt.dir, mcpServers: [] })).sessionId;
}

describe("ACP's remote transport over Streamable HTTP", () => {
  it("runs two sessions on one connection: streamed prompts, a permission, both ways of cancelling, passthrough", async () => {
    const updates: SessionNotification[] = [];
    const conn = overHttp(updates);
    const init = await initialize(conn);
    expect(init.agentCapabilities?.loadSession).toBe(true);
    const [a, b] = [await newSession(conn), await newSession(conn)];
    expect(a).not.toBe(b);

    // Both sessions at once, each answer and stream on its own session.
    const [ra, rb] = await Promise.all([prompt(conn, a, "hello a"), prompt(conn, b, "/stream 20 3")]);
    expect([ra.stopReason, rb.stopReason]).toEqual(["end_turn", "end_turn"]);
    expect(textOf(updates, a)).toBe("You said: hello a");
    expect(textOf(updates, b)).toBe("xxx".repeat(20));

    // The agent asks, the client app answers on the session's route.
    expect((await prompt(conn, a, "/permission")).stopReason).toBe("end_turn");
    expect(textOf(updates, a)).toContain("Permission granted: wrote hello.txt");

    // The agent's other requests to the client (here fs/read_text_file) come on the session's stream too.
    expect((await prompt(conn, b, "/read notes.md")).stopReason).toBe("end_turn");
    expect(textOf(updates, b)).toContain("Read notes.md: the client's copy of notes.md");

    // session/cancel ends a turn; so does the SDK's own $/cancel_request.
    const slow = prompt(conn, b, "/slow 200 50");
    await waitFor(async () => textOf(updates, b).includes("tick 1 "), "the slow turn to start");
    await conn.agent.notify(methods.agent.session.cancel, { sessionId: b });
    expect((await slow).stopReason).toBe("cancelled");
    const abort = new AbortController();
    const cancelled = prompt(conn, a, "/slow 200 50", abort.signal);
    await waitFor(async () => textOf(updates, a).includes("tick 1 "), "the second slow turn to start");
    abort.abort();
    const outcome = await cancelled.then(
      (r) => r.stopReason,
      (err: { code?: number }) => err.code,
    );
    expect(["cancelled", -32800]).toContain(outcome);

    // A method the runtime does not know goes to the agent, and its answer comes back as the agent gave it.
    const unknown = await conn.agent.request("_mock/unknown", { sessionId: a }).catch((err: { code?: number }) => err);
    expect((unknown as { code?: number }).code).toBe(-32601);

    // The sessions are the runtime's session records, under the connection's server id.
    const listed = (await (await rt.api("/v1/sessions?machine=local&agent=mock")).json()) as { sessions: { sessionId: string; serverId: string }[] };
    const mine = listed.sessions.filter((s) => s.sessionId === a || s.sessionId === b);
    expect(mine).toHaveLength(2);
    expect(mine[0]!.serverId).toMatch(/^acpc-/);
    conn.close();
    await conn.closed;
  });

  it("refuses what the SDK's server refuses, with problems, and keeps a connection to the token that opened it", async () => {
    const post = (body: unknown, headers: Record<string, string> = {}, token = rt.token) =>
      fetch(`${rt.url}/machines/local/acp?agent=mock`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
    const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
    expect(init.status).toBe(200);
    const connectionId = init.headers.get("acp-connection-id")!;
    expect(connectionId).toMatch(/^acpc-/);

    expect((await post({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).status).toBe(400); // no connection
    expect(
      (await post({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } }, { "acp-connection-id": "acpc-nope" })).status,
    ).toBe(404);
    const noSession = await post(
      { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: "x", prompt: [] } },
      { "acp-connection-id": connectionId },
    );
    expect(noSession.status).toBe(400);
    expect(noSession.headers.get("content-type")).toContain("application/problem+json");
    expect((await noSession.json()).detail).toContain("Acp-Session-Id");
    const twice = await post({ jsonrpc: "2.0", id: 4, method: "initialize", params: { protocolVersion: 1 } }, { "acp-connection-id": connectionId });
    expect(twice.status).toBe(400);
    const notSse = await fetch(`${rt.url}/machines/local/acp`, {
      headers: { authorization: `Bearer ${rt.token}`, "acp-connection-id": connectionId, accept: "application/json" },
    });
    expect(notSse.status).toBe(406);

    // Another member's token cannot use it, even knowing its id.
    const other = await issueToken("someone-else", "member");
    const foreign = await post(
      { jsonrpc: "2.0", id: 5, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } },
      { "acp-connection-id": connectionId },
      other.token,
    );
    expect(foreign.status).toBe(404);

    const closed = await fetch(`${rt.url}/machines/local/acp`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${rt.token}`, "acp-connection-id": connectionId },
    });
    expect(closed.status).toBe(202);
    expect(
      (await post({ jsonrpc: "2.0", id: 6, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } }, { "acp-connection-id": connectionId })).status,
    ).toBe(404);
    // The audit log has the connection opened and closed.
    const audit = (await (await rt.api("/v1/audit?limit=20")).json()) as { entries: { method: string; route: string; machine: string; status: number }[] };
    const acp = audit.entries.filter((e) => e.route.endsWith("/acp") && e.machine === "local").map((e) => `${e.method} ${e.status}`);
    expect(acp).toContain("POST 200");
    expect(acp).toContain("DELETE 202");
  });

  it("loses nothing of a turn across a dropped tunnel", async () => {
    const updates: SessionNotification[] = [];
    const conn = overHttp(updates);
    await initialize(conn);
    const session = await newSession(conn);
    const turn = prompt(conn, session, "/slow 40 25");
    await waitFor(async () => textOf(updates, session).includes("tick 5 "), "the turn to stream");
    rt.sidecars.get("local")!.child.kill("SIGUSR2"); // the sidecar drops its tunnel and dials again
    expect((await turn).stopReason).toBe("end_turn");
    expect(textOf(updates, session)).toBe(Array.from({ length: 40 }, (_, i) => `tick ${i + 1} `).join(""));
    conn.close();
  });

  it("answers 409 for a session whose agent a sidecar restart took, and reattaches it with session/load (same or new connection)", async () => {
    const updates: SessionNotification[] = [];
    const conn = overHttp(updates);
    await initialize(conn);
    const [a, b] = [await newSession(conn), await newSession(conn)];
    expect((await prompt(conn, a, "first turn")).stopReason).toBe("end_turn");
    expect((await prompt(conn, b, "turn of b")).stopReason).toBe("end_turn");

    await rt.sidecars.get("local")!.stop("SIGKILL");
    await rt.addSidecar("local");

    const refused = await prompt(conn, a, "after the restart").catch((err: { data?: { status?: number } }) => err);
    expect((refused as { data?: { status?: number } }).data?.status).toBe(409);

    // The same connection: session/load brings it back (the agent starts again as this client initialized it).
    updates.length = 0;
    await conn.agent.request(methods.agent.session.load, { sessionId: a, cwd: rt.dir, mcpServers: [] });
    // What the load replays is sent before its answer; they travel on two HTTP streams, read in either order.
    await waitFor(async () => textOf(updates, a) === "You said: first turn", "the replay of the load");
    updates.length = 0;
    expect((await prompt(conn, a, "/history")).stopReason).toBe("end_turn");
    expect(textOf(updates, a)).toBe("History (1): first turn");

    // A new connection: initialize, then session/load of the other session.
    const fresh: SessionNotification[] = [];
    const again = overHttp(fresh);
    await initialize(again);
    await again.agent.request(methods.agent.session.load, { sessionId: b, cwd: rt.dir, mcpServers: [] });
    await waitFor(async () => textOf(fresh, b) === "You said: turn of b", "what the load replays");
    fresh.length = 0;
    expect((await prompt(again, b, "/history")).stopReason).toBe("end_turn");
    expect(textOf(fresh, b)).toBe("History (1): turn of b");
    conn.close();
    again.close();
  });
});

describe("ACP's remote transport over a WebSocket", () => {
  it("runs two sessions on one socket with a permission and a cancel, and is closed for a reconnect when the sidecar restarts", async () => {
    const updates: SessionNotification[] = [];
    const conn = overWebSocket(updates);
    const init = await initialize(conn);
    expect(init.agentCapabilities?.loadSession).toBe(true);
    const [a, b] = [await newSession(conn), await newSession(conn)];
    const [ra, rb] = await Promise.all([prompt(conn, a, "/permission"), prompt(conn, b, "/stream 10 3")]);
    expect([ra.stopReason, rb.stopReason]).toEqual(["end_turn", "end_turn"]);
    expect(textOf(updates, a)).toContain("Permission granted: wrote hello.txt");
    expect(textOf(updates, b)).toBe("xxx".repeat(10));

    const slow = prompt(conn, b, "/slow 200 50");
    await waitFor(async () => textOf(updates, b).includes("tick 1 "), "the slow turn to start");
    await conn.agent.notify(methods.agent.session.cancel, { sessionId: b });
    expect((await slow).stopReason).toBe("cancelled");

    await rt.sidecars.get("local")!.stop("SIGKILL");
    await rt.addSidecar("local");
    await conn.closed; // told to connect again
    const fresh: SessionNotification[] = [];
    const again = overWebSocket(fresh, await ticket());
    await initialize(again);
    await again.agent.request(methods.agent.session.load, { sessionId: a, cwd: rt.dir, mcpServers: [] });
    // One socket keeps the agent's order: what the load replayed came before its answer.
    expect(textOf(fresh, a)).toContain("Permission granted: wrote hello.txt");
    fresh.length = 0;
    expect((await prompt(again, a, "/history")).stopReason).toBe("end_turn");
    expect(textOf(fresh, a)).toBe("History (1): /permission");
    again.close();
  });

  it("gives a viewer's ticket no connection, and none at all without a token", async () => {
    const viewer = await issueToken("onlooker", "viewer");
    const refused = (url: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(url);
        ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.on("open", () => resolve(101));
        ws.on("error", () => undefined);
      });
    const base = `${rt.url.replace(/^http/, "ws")}/machines/local/acp?agent=mock`;
    expect(await refused(`${base}&access_token=${encodeURIComponent(await ticket(viewer.token))}`)).toBe(403);
    expect(await refused(base)).toBe(401);
  });
});
