/**
 * Trust, second pass (SECURITY.md), inside workerd with a fake sidecar: a scoped admin stays inside its
 * scope, an `/acp` connection is its opener's on every route, revocation and expiry end what is already
 * open, a rotated API_TOKEN ends its sign-ins, `?access_token=` only where a route streams, cookie
 * WebSockets only from this origin, and inputs refused where they are accepted.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import worker from "../worker";
import type { FakeSidecar } from "../../test/workers/fake-sidecar";
import { as, BASE, sidecarsPerTest } from "../../test/workers/requests";

const connect = sidecarsPerTest();

const admin = (path: string, init: RequestInit = {}) => as(env.API_TOKEN, path, init);

type Issued = { id: string; token: string; machines: string[] | "*"; name: string };

async function issue(by: string, body: Record<string, unknown>): Promise<Issued> {
  const res = await as(by, "/v1/tokens", { method: "POST", body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Issued;
}

async function detailOf(res: Response): Promise<string> {
  return ((await res.json()) as { detail: string }).detail;
}

/** Read an SSE body until `done` says enough, or `ms` pass. */
async function readUntil(res: Response, done: (text: string) => boolean, ms = 3_000): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + ms;
  while (!done(text) && Date.now() < deadline) {
    const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()))]);
    if (chunk === null || chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
  }
  await reader.cancel().catch(() => {});
  return text;
}

/** Opens an `/acp` connection on `machine` as `token` (the fake sidecar answers initialize); its id. */
async function openConnection(sidecar: FakeSidecar, token: string): Promise<string> {
  const opening = as(token, `/machines/${sidecar.machine}/acp?agent=mock`, {
    method: "POST",
    headers: { accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
  });
  const init = await sidecar.call("acp.post");
  sidecar.answer(init, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 0, result: { protocolVersion: 1, agentCapabilities: {} } }) });
  const opened = await opening;
  expect(opened.status, await opened.clone().text()).toBe(200);
  return opened.headers.get("acp-connection-id")!;
}

describe("a scoped admin stays inside its scope", () => {
  it("issues tokens only within its machines (an omitted scope is its own), never '*'", async () => {
    await connect("scope-a");
    await connect("scope-b");
    const scoped = await issue(env.API_TOKEN, { name: "admin-of-a", role: "admin", machines: ["scope-a"] });
    const inherited = await issue(scoped.token, { name: "member-from-scoped", role: "member" });
    expect(inherited.machines).toEqual(["scope-a"]);
    for (const machines of ["*", ["scope-b"], ["scope-a", "scope-b"]]) {
      const res = await as(scoped.token, "/v1/tokens", { method: "POST", body: JSON.stringify({ name: "wider", role: "viewer", machines }) });
      expect(res.status, JSON.stringify(machines)).toBe(403);
      expect(await detailOf(res)).toMatch(/may not grant/);
    }
    // An unscoped admin grants '*'.
    expect((await issue(env.API_TOKEN, { name: "everywhere", role: "viewer", machines: "*" })).machines).toBe("*");
  });

  it("mints and revokes machine tokens only for its machines", async () => {
    await connect("scope-a");
    const scoped = await issue(env.API_TOKEN, { name: "admin-of-a-2", role: "admin", machines: ["scope-a"] });
    expect((await as(scoped.token, "/v1/machine-tokens", { method: "POST", body: JSON.stringify({ machine: "scope-b" }) })).status).toBe(403);
    expect((await as(scoped.token, "/v1/machine-tokens/scope-b", { method: "DELETE" })).status).toBe(403);
    expect((await as(scoped.token, "/v1/machine-tokens", { method: "POST", body: JSON.stringify({ machine: "scope-a" }) })).status).toBe(201);
  });

  it("lists, revokes and reads the audit of what it covers only", async () => {
    await connect("scope-a");
    await connect("scope-b");
    const scoped = await issue(env.API_TOKEN, { name: "admin-of-a-3", role: "admin", machines: ["scope-a"] });
    const everywhere = await issue(env.API_TOKEN, { name: "viewer-everywhere", role: "viewer" });
    const onB = await issue(env.API_TOKEN, { name: "member-of-b", role: "member", machines: ["scope-b"] });
    const onA = await issue(scoped.token, { name: "member-of-a", role: "member" });
    const listed = ((await (await as(scoped.token, "/v1/tokens")).json()) as { tokens: { name: string }[] }).tokens.map((t) => t.name);
    expect(listed).toContain("member-of-a");
    expect(listed).not.toContain("viewer-everywhere");
    expect(listed).not.toContain("member-of-b");
    expect((await as(scoped.token, `/v1/tokens/${everywhere.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await as(scoped.token, `/v1/tokens/${onB.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await as(env.API_TOKEN, "/machines/scope-b/v1/whoami")).status).toBe(200);
    expect((await as(onB.token, "/machines/scope-b/v1/processes", { method: "POST", body: "{" })).status).toBe(400); // audited on b
    expect((await as(scoped.token, `/v1/tokens/${onA.id}`, { method: "DELETE" })).status).toBe(200);
    const audit = (await (await as(scoped.token, "/v1/audit?limit=500")).json()) as { entries: { machine: string | null }[] };
    expect(audit.entries.length).toBeGreaterThan(0);
    expect(audit.entries.every((e) => e.machine === "scope-a")).toBe(true);
  });

  it("cannot change the team's documents, which reach every machine; an unscoped admin can", async () => {
    const scoped = await issue(env.API_TOKEN, { name: "admin-of-a-4", role: "admin", machines: ["scope-a"] });
    for (const kind of ["skills", "mcp", "agents"]) {
      const body = kind === "skills" ? { sources: [] } : kind === "mcp" ? { mcpServers: {} } : { agents: {} };
      const res = await as(scoped.token, `/v1/config/${kind}`, { method: "PUT", body: JSON.stringify(body) });
      expect(res.status, kind).toBe(403);
      expect(await detailOf(res)).toMatch(/every machine/);
    }
    expect((await admin("/v1/config/agents", { method: "PUT", body: JSON.stringify({ agents: {} }) })).status).toBe(200);
  });
});

describe("an /acp connection belongs to the token that opened it, on every route", () => {
  it("is not reachable through /v1/acp/{id} by another member, nor listed for it; an admin sees it marked", async () => {
    const sidecar = await connect("conn-owner");
    const owner = await issue(env.API_TOKEN, { name: "conn-opener", role: "member" });
    const other = await issue(env.API_TOKEN, { name: "conn-other", role: "member" });
    const connection = await openConnection(sidecar, owner.token);
    expect(connection).toMatch(/^acpc-/);
    const v1 = `/machines/conn-owner/v1/acp/${connection}`;
    const posted = await as(other.token, v1, {
      method: "POST",
      headers: { accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } }),
    });
    expect(posted.status).toBe(404);
    expect((await as(other.token, v1, { method: "DELETE" })).status).toBe(404);
    expect((await as(other.token, v1, { headers: { accept: "text/event-stream" } })).status).toBe(404);
    // Nothing of it reached the machine: its initialize is the one call that names it, and nothing was stopped.
    const calls = sidecar.received.flatMap((f) => (f.t === "req" ? [{ op: f.op, serverId: (f.args as { serverId?: string }).serverId }] : []));
    expect(calls.filter((call) => call.serverId === connection)).toEqual([{ op: "acp.post", serverId: connection }]);

    const server = { serverId: connection, agent: "mock", createdAtMs: 1 };
    const list = async (token: string) => {
      const listing = as(token, "/machines/conn-owner/v1/acp");
      sidecar.answer(await sidecar.call("acp.list"), { servers: [server, { serverId: "shared", agent: "mock", createdAtMs: 2 }] });
      return ((await (await listing).json()) as { servers: { serverId: string; connection?: { openedBy: string } }[] }).servers;
    };
    expect((await list(other.token)).map((s) => s.serverId)).toEqual(["shared"]);
    expect(await list(owner.token)).toContainEqual({ ...server, connection: { openedBy: "conn-opener" } });
    expect(await list(env.API_TOKEN)).toContainEqual({ ...server, connection: { openedBy: "conn-opener" } });
    // Its opener uses it through /v1/acp too; an admin may stop it.
    const stopping = as(env.API_TOKEN, v1, { method: "DELETE" });
    sidecar.answer(await sidecar.call("acp.delete"), { deleted: true });
    expect((await stopping).status).toBe(204);
  });
});

describe("revocation and expiry end what is already open", () => {
  it("ends a transcript being followed, also while the machine is offline, with a final event saying why", async () => {
    const sidecar = await connect("revoke-t");
    const post = (body: unknown, query = "") =>
      admin(`/machines/revoke-t/v1/acp/s1${query}`, { method: "POST", headers: { accept: "application/json" }, body: JSON.stringify(body) });
    const initializing = post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    sidecar.answer(await sidecar.call("acp.post"), { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1 } }) });
    await initializing;
    const starting = post({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/tmp/p", mcpServers: [] } });
    sidecar.answer(await sidecar.call("acp.post"), { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 2, result: { sessionId: "acp-1" } }) });
    await starting;
    const session = ((await (await admin("/machines/revoke-t/v1/sessions")).json()) as { sessions: { id: string }[] }).sessions[0]!.id;

    const reader = await issue(env.API_TOKEN, { name: "transcript-reader", role: "viewer" });
    const following = await as(reader.token, `/v1/sessions/${session}/transcript`, { headers: { accept: "text/event-stream" } });
    expect(following.status).toBe(200);
    sidecar.drop(); // the machine goes away; the transcript stays readable
    const revokedAt = Date.now();
    const read = readUntil(following, (t) => t.includes("event: error"));
    expect((await admin(`/v1/tokens/${reader.id}`, { method: "DELETE" })).status).toBe(200);
    const text = await read;
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
    expect(text).toMatch(/event: error\ndata: .*token_invalid.*'transcript-reader' that opened this stream was revoked/);
  });

  it("ends an ACP server's event stream and an /acp connection's stream of a revoked token", async () => {
    const sidecar = await connect("revoke-acp");
    const member = await issue(env.API_TOKEN, { name: "acp-reader", role: "member" });
    const opening = as(member.token, "/machines/revoke-acp/v1/acp/shared-1", { headers: { accept: "text/event-stream" } });
    const sub = await sidecar.subscription();
    sidecar.events(sub.sub, [[1, JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: {} })]]);
    const events = await opening;
    expect(events.status).toBe(200);
    const connection = await openConnection(sidecar, member.token);
    const stream = await as(member.token, "/machines/revoke-acp/acp", { headers: { accept: "text/event-stream", "acp-connection-id": connection } });
    expect(stream.status).toBe(200);
    const reads = [readUntil(events, (t) => t.includes("event: error")), readUntil(stream, (t) => t.includes("event: error"))];
    expect((await admin(`/v1/tokens/${member.id}`, { method: "DELETE" })).status).toBe(200);
    for (const text of await Promise.all(reads)) expect(text).toContain("'acp-reader' that opened this stream was revoked");
  });

  it("closes an /acp WebSocket of a revoked token, and stops its agent (a name of any text, a reason cut to what a close frame carries)", async () => {
    const sidecar = await connect("revoke-ws");
    const member = await issue(env.API_TOKEN, { name: `ws-hölder ✓ ${"é".repeat(60)}`, role: "member" });
    const res = await as(member.token, "/machines/revoke-ws/acp?agent=mock", { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket!;
    ws.accept();
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
    const stop = sidecar.call("acp.delete");
    expect((await admin(`/v1/tokens/${member.id}`, { method: "DELETE" })).status).toBe(200);
    const close = await closed;
    expect(close).toMatchObject({ code: 1008, reason: expect.stringMatching(/^token revoked: the token 'ws-hölder ✓ é+/) });
    expect(new TextEncoder().encode(close.reason).length).toBeLessThanOrEqual(123);
    sidecar.answer(await stop, { deleted: true });
  });

  it("ends a stream when its token expires", async () => {
    const sidecar = await connect("expire-acp");
    const brief = await issue(env.API_TOKEN, { name: "brief", role: "member", expiresInSeconds: 1 });
    const connection = await openConnection(sidecar, brief.token);
    const stream = await as(brief.token, "/machines/expire-acp/acp", { headers: { accept: "text/event-stream", "acp-connection-id": connection } });
    expect(stream.status).toBe(200);
    // The 1 s expiry is seen by the stream's own check; a loaded machine runs it late, hence the long wait.
    const text = await readUntil(stream, (t) => t.includes("event: error"), 15_000);
    expect(text).toContain("'brief' that opened this stream expired");
  });
});

describe("sign-ins, tickets and cookies", () => {
  /** The worker as deployed with other bindings (a rotated API_TOKEN), over the same objects. */
  const withEnv = (vars: Record<string, string>, request: Request) =>
    worker.fetch(request, { ...env, ...vars }, { waitUntil: () => {}, passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext);

  it("refuses a sign-in cookie made with an API_TOKEN that is no longer configured", async () => {
    const signin = await admin("/v1/signin", { method: "POST" });
    expect(signin.status).toBe(201);
    const cookie = signin.headers.get("set-cookie")!.split(";")[0]!;
    expect((await SELF.fetch(`${BASE}/v1/whoami`, { headers: { cookie } })).status).toBe(200);
    // Rotated: old,new still accepts it; new alone ends it at once.
    const both = await withEnv({ API_TOKEN: `${env.API_TOKEN},at_the-new-one` }, new Request(`${BASE}/v1/whoami`, { headers: { cookie } }));
    expect(both.status).toBe(200);
    const rotated = await withEnv({ API_TOKEN: "at_the-new-one" }, new Request(`${BASE}/v1/whoami`, { headers: { cookie } }));
    expect(rotated.status).toBe(401);
    expect(await detailOf(rotated)).toMatch(/no longer configured/);
  });

  it("takes ?access_token= on a streaming route only, never on a JSON route whatever its Accept says", async () => {
    await connect("tickets");
    const { ticket } = (await (await admin("/v1/tickets", { method: "POST" })).json()) as { ticket: string };
    const sse = { accept: "text/event-stream" };
    for (const path of [
      "/v1/tokens",
      "/v1/audit",
      "/machines/tickets/v1/fs/file?path=/etc/hostname",
      "/v1/sessions",
      "/machines/tickets/v1/processes/p1/logs",
    ]) {
      const res = await SELF.fetch(`${BASE}${path}${path.includes("?") ? "&" : "?"}access_token=${ticket}`, { headers: sse });
      expect(res.status, path).toBe(401);
    }
    // Preferred over JSON by q-value: still a JSON route.
    const weighted = await SELF.fetch(`${BASE}/v1/tokens?access_token=${ticket}`, { headers: { accept: "application/json;q=0.1, text/event-stream" } });
    expect(weighted.status).toBe(401);
    // A streaming route takes it; asking JSON of it with the ticket does not.
    const stream = await SELF.fetch(`${BASE}/machines/tickets/v1/acp/nobody?access_token=${ticket}`, {
      headers: { accept: "text/event-stream;q=0.9, application/json;q=0.5" },
    });
    expect(stream.status).not.toBe(401);
    await stream.body?.cancel();
    const json = await SELF.fetch(`${BASE}/machines/tickets/v1/acp/nobody?access_token=${ticket}`, { headers: { accept: "application/json" } });
    expect(json.status).toBe(401);
  });

  it("refuses a cookie-authenticated WebSocket from another origin (403), and takes one from its own", async () => {
    await connect("origin-check");
    const signin = await admin("/v1/signin", { method: "POST" });
    const cookie = signin.headers.get("set-cookie")!.split(";")[0]!;
    const upgrade = (origin: string | null) =>
      SELF.fetch(`${BASE}/machines/origin-check/acp?agent=mock`, { headers: { cookie, upgrade: "websocket", ...(origin ? { origin } : {}) } });
    for (const origin of ["https://evil.example", "https://sub.runtime.test", null]) {
      const res = await upgrade(origin);
      expect(res.status, String(origin)).toBe(403);
    }
    const own = await upgrade(BASE);
    expect(own.status).toBe(101);
    own.webSocket?.accept();
    own.webSocket?.close(1000, "done");
  });
});

describe("inputs are checked where they are accepted", () => {
  it("refuses webhooks pointed inside, and a push key that is not a P-256 point, and events named twice", async () => {
    const hook = (url: string, extra: Record<string, unknown> = {}) =>
      admin("/v1/notifications/subscriptions", { method: "POST", body: JSON.stringify({ kind: "webhook", url, secret: "whsec_0123456789abcdef", ...extra }) });
    for (const url of ["http://127.0.0.1:9000/hook", "https://169.254.169.254/", "https://2130706433/", "https://[::ffff:10.0.0.1]/", "https://x.localhost/"]) {
      const res = await hook(url);
      expect(res.status, url).toBe(400);
      expect(await detailOf(res), url).toMatch(/https|inside/);
    }
    const twice = await hook("https://hooks.example.com/x", { events: Array(20).fill("turn.finished") });
    expect(twice.status).toBe(400);
    const push = await admin("/v1/notifications/subscriptions", {
      method: "POST",
      body: JSON.stringify({
        kind: "webpush",
        subscription: { endpoint: "https://push.example.com/x", keys: { p256dh: btoa("\0".repeat(65)).replace(/=+$/, ""), auth: "BTBZMqHH6r4Tts7J_aSIgg" } },
      }),
    });
    expect(push.status).toBe(400);
    expect(await detailOf(push)).toMatch(/P-256/);
  });

  it("keeps no receiver's body in the delivery log and follows no redirect", async () => {
    const created = await admin("/v1/notifications/subscriptions", {
      method: "POST",
      body: JSON.stringify({ kind: "webhook", url: "https://hooks.example.com/redirects", secret: "whsec_0123456789abcdef" }),
    });
    const { id } = (await created.json()) as { id: string };
    const seen: RequestInit[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      if (!new Request(input).url.startsWith("https://hooks.example.com/")) return realFetch(input, init);
      seen.push(init ?? {});
      return new Response("<html>secret internal page</html>", { status: 302, headers: { location: "http://169.254.169.254/" } });
    });
    expect((await admin(`/v1/notifications/subscriptions/${id}/test`, { method: "POST" })).status).toBe(202);
    await vi.waitFor(
      async () => {
        const { deliveries } = (await (await admin(`/v1/notifications/deliveries?subscription=${id}`)).json()) as { deliveries: { error: string | null }[] };
        expect(deliveries[0]?.error).toBe("HTTP 302: redirects are not followed");
      },
      { timeout: 15_000 },
    );
    expect(seen.every((init) => init.redirect === "manual")).toBe(true);
    const all = await (await admin("/v1/notifications/deliveries")).text();
    expect(all).not.toContain("secret internal page");
  });

  it("refuses agent settings that change how programs load, and control characters in values", async () => {
    for (const env_ of [
      { NODE_OPTIONS: "--require /tmp/x.js" },
      { LD_PRELOAD: "/tmp/x.so" },
      { dyld_insert_libraries: "x" },
      { PATH: "/tmp" },
      { GIT_SSH_COMMAND: "sh" },
    ]) {
      const res = await admin("/v1/config/agents", { method: "PUT", body: JSON.stringify({ agents: { mock: { env: env_ } } }) });
      expect(res.status, JSON.stringify(env_)).toBe(400);
      expect(await detailOf(res)).toMatch(/changes which program runs/);
    }
    const nul = await admin("/v1/config/agents", { method: "PUT", body: JSON.stringify({ agents: { mock: { env: { MOCK_MODE: "a\u0000b" } } } }) });
    expect(nul.status).toBe(400);
    expect(
      (await admin("/v1/config/agents", { method: "PUT", body: JSON.stringify({ agents: { mock: { env: { MOCK_MODE: "fast\tquiet" } } } }) })).status,
    ).toBe(200);
  });
});
