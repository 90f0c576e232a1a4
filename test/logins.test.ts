/**
 * Agents that need a login (docs/architecture.md, "Logins"), with the built-in `mock-login`: a session it
 * refuses is a record in `needs_login` with its methods; the terminal method typed through the API and the
 * env_var method each log it in and start the session that waited; logout returns it to needs_login; the
 * value typed is kept on the machine only; its own flow's page reaches a person (the agent's login, a
 * notification) and, accepted, logs it in and starts the session that waited; a turn it refuses (it started
 * the session, as Claude Code does) puts the session in needs_login the same way.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

type Session = {
  id: string;
  sessionId: string;
  state: string;
  waiting?: { kind: string } | null;
  login?: { methods: { id: string; type: string; vars?: string[] }[] } | null;
};

async function json<T>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return JSON.parse(text) as T;
}

const post = (rt: Runtime, path: string, body: unknown) =>
  rt.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** initialize and session/new on a fresh server of mock-login: the agent's answer to session/new. */
async function startSession(
  rt: Runtime,
  serverId: string,
): Promise<{ error?: { code: number; data?: Record<string, unknown> }; result?: { sessionId: string } }> {
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: { auth: { terminal: true } } } };
  await json(rpc(rt, serverId, init, "?agent=mock-login"));
  return json(rpc(rt, serverId, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } }));
}

const session = (rt: Runtime, id: string) => json<Session>(rt.api(`/v1/sessions/${id}`));
/** A session that waited for its agent's login, once it has started (idle). */
const startedAfterLogin = (rt: Runtime, id: string) =>
  waitFor(
    async () => {
      const s = await session(rt, id);
      return s.state === "idle" ? s : null;
    },
    "the session that waited to start",
    20_000,
  );

/** Every file under a folder, as text (the worker's storage: SQLite files and whatever else workerd keeps). */
async function allText(dir: string): Promise<string> {
  let text = "";
  for (const entry of await readdir(dir, { recursive: true })) {
    const path = join(dir, entry);
    if ((await stat(path)).isFile()) text += (await readFile(path)).toString("latin1");
  }
  return text;
}

describe("mock-login", () => {
  it("is needs_login with its three methods; the terminal method, typed through the API, logs it in and the session starts", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const info = await json<{ login: { state: string; methods: { id: string; type: string }[]; logout: boolean } }>(rt.api("/v1/agents/mock-login"));
    expect(info.login).toMatchObject({ state: "needs_login", logout: true });
    expect(info.login.methods.map((m) => [m.id, m.type])).toEqual([
      ["mock-terminal", "terminal"],
      ["mock-key", "env_var"],
      ["mock-browser", "agent"],
    ]);

    const refused = await startSession(rt, "login-t");
    expect(refused.error?.code).toBe(-32000);
    const id = String(refused.error?.data?.["agent-runtime/session"]);
    const waiting = await session(rt, id);
    expect(waiting).toMatchObject({ state: "needs_login", waiting: { kind: "login" } });
    expect(waiting.login?.methods.map((m) => m.type)).toEqual(["terminal", "env_var", "agent"]);

    const started = await json<{ type: string; process: { id: string; tty: boolean } }>(
      post(rt, "/v1/agents/mock-login/login", { method: "mock-terminal" }),
      201,
    );
    expect(started).toMatchObject({ type: "terminal", process: { tty: true } });
    const pid = started.process.id;
    const code = await waitFor(async () => {
      const logs = await json<{ entries: { data: string; encoding: string }[] }>(rt!.api(`/v1/processes/${pid}/logs`));
      const out = logs.entries.map((e) => Buffer.from(e.data, e.encoding === "base64" ? "base64" : "utf8").toString()).join("");
      return /code: (\d{6})/.exec(out)?.[1];
    }, "the login's code on its terminal");
    await json(post(rt, `/v1/processes/${pid}/input`, { data: `${code}\r`, encoding: "utf8" }));
    const ready = await startedAfterLogin(rt, id);
    expect(ready.sessionId).toMatch(/^mock-/);
    expect(ready.waiting ?? null).toBeNull();
    const prompted = await json<{ id: string }>(post(rt, `/v1/sessions/${id}/prompt`, { prompt: [{ type: "text", text: "hello after login" }] }), 202);
    expect(prompted.id).toMatch(/^prm-/);
    await waitFor(async () => {
      const { entries } = await json<{ entries: { kind: string; text?: string }[] }>(rt!.api(`/v1/sessions/${id}/transcript`));
      return entries.some((e) => e.kind === "text" && e.text?.includes("You said: hello after login"));
    }, "the agent's answer");
    expect((await json<{ login: { state: string } }>(rt.api("/v1/agents/mock-login"))).login.state).toBe("logged_in");

    // Logging out returns it to needs_login.
    const out = await json<{ loggedOut: boolean; state: string }>(rt.api("/v1/agents/mock-login/login", { method: "DELETE" }));
    expect(out).toMatchObject({ loggedOut: true, state: "needs_login" });
    expect((await startSession(rt, "login-t2")).error?.code).toBe(-32000);
  });

  it("keeps an env_var value on the machine only (0600), starts the waiting session with it, and forgets it on logout", async () => {
    rt = await startRuntime({ machines: ["local"], persist: true });
    const refused = await startSession(rt, "login-e");
    const id = String(refused.error?.data?.["agent-runtime/session"]);
    const secret = `mock-key-${crypto.randomUUID()}`;
    const login = await json<{ state: string; started: string[] }>(
      post(rt, "/v1/agents/mock-login/login", { method: "mock-key", values: { MOCK_AGENT_KEY: secret } }),
    );
    expect(login).toMatchObject({ state: "logged_in", started: [id] });
    expect(await session(rt, id)).toMatchObject({ state: "idle" });
    expect((await json<{ stored: string[] }>(rt.api("/v1/agents/mock-login/login"))).stored).toEqual(["MOCK_AGENT_KEY"]);

    // Kept by the sidecar, readable by its user only; nowhere in the worker's storage or its audit.
    const file = join(rt.dir, "data-local", "credentials", "agents", "mock-login.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, "utf8")).toContain(secret);
    const audit = await json<{ entries: { route: string }[] }>(rt.api("/v1/audit?limit=50"));
    expect(audit.entries.map((e) => e.route)).toContain("/v1/agents/{agent}/login (agent mock-login, method mock-key)");
    expect(JSON.stringify(audit)).not.toContain(secret);
    expect(await allText(join(rt.dir, "state"))).not.toContain(secret);

    // A new session of the agent starts at once: its process is given the value.
    expect((await startSession(rt, "login-e2")).result?.sessionId).toMatch(/^mock-/);
    const out = await json<{ removed: string[]; state: string }>(rt.api("/v1/agents/mock-login/login", { method: "DELETE" }));
    expect(out).toEqual({ removed: ["MOCK_AGENT_KEY"], loggedOut: true, state: "needs_login" });
    await expect(stat(file)).rejects.toThrow();
  });

  it("shows the page its own flow asks a person to open on its login and in a notification; accepted, it logs in and the waiting session starts", async () => {
    rt = await startRuntime({ machines: ["local"] });
    type Told = { event: string; agent: string | null; session: unknown; url: string; login?: { question?: { url: string } } };
    const got: Told[] = [];
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        got.push(JSON.parse(Buffer.concat(chunks).toString()) as Told);
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    try {
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      await json(post(rt, "/v1/notifications/subscriptions", { kind: "webhook", url: hook, secret: "0123456789abcdef", events: ["agent.login"] }), 201);
      const refused = await startSession(rt, "login-a");
      const id = String(refused.error?.data?.["agent-runtime/session"]);
      expect(await session(rt, id)).toMatchObject({ state: "needs_login" });

      const started = await json(post(rt, "/v1/agents/mock-login/login", { method: "mock-browser" }), 202);
      expect(started).toMatchObject({ method: "mock-browser", type: "agent", state: "needs_login" });
      type Login = { state: string; pending?: { requestId: string | number; method: string; url: string; message: string } | null };
      const asked = await waitFor(async () => {
        const { login } = await json<{ login: Login }>(rt!.api("/v1/agents/mock-login"));
        return login.pending ?? null;
      }, "the page its flow asks to open");
      expect(asked).toMatchObject({ method: "mock-browser", url: "https://example.com/mock-agent/device", message: "Open this page to log the mock in" });
      const told = await waitFor(async () => got.find((p) => p.login?.question) ?? null, "the agent.login notification with the page");
      expect(told).toMatchObject({
        event: "agent.login",
        agent: "mock-login",
        session: null,
        url: expect.stringMatching(/\/machines\/local\/agents$/),
        login: { question: { url: "https://example.com/mock-agent/device" } },
      });
      // One flow at a time; an answer to another question is refused.
      expect((await post(rt, "/v1/agents/mock-login/login", { method: "mock-browser" })).status).toBe(409);
      expect((await post(rt, "/v1/agents/mock-login/login/elicitation", { requestId: "not-it", action: "accept" })).status).toBe(409);
      const answered = await json<{ login?: unknown; pending: unknown }>(post(rt, "/v1/agents/mock-login/login/elicitation", { action: "accept" }));
      expect(answered.pending).toBeNull();

      const ready = await startedAfterLogin(rt, id);
      expect(ready.sessionId).toMatch(/^mock-/);
      expect((await json<{ login: Login }>(rt.api("/v1/agents/mock-login"))).login).toMatchObject({ state: "logged_in", pending: null });
      const audit = await json<{ entries: { route: string }[] }>(rt.api("/v1/audit?limit=50"));
      expect(audit.entries.map((e) => e.route)).toContain("/v1/agents/{agent}/login/elicitation (agent mock-login, accept)");

      // Logged out, and the page declined: the flow ends without a login (a new one may start), and nothing is left waiting.
      await json(rt.api("/v1/agents/mock-login/login", { method: "DELETE" }));
      await json(post(rt, "/v1/agents/mock-login/login", { method: "mock-browser" }), 202);
      await waitFor(async () => (await json<{ login: Login }>(rt!.api("/v1/agents/mock-login"))).login.pending ?? null, "the page again");
      await json(post(rt, "/v1/agents/mock-login/login/elicitation", { action: "decline" }));
      await waitFor(async () => (await post(rt!, "/v1/agents/mock-login/login", { method: "mock-browser" })).status === 202, "the declined flow to end");
      expect((await json<Login>(rt.api("/v1/agents/mock-login/login?no_cache=true"))).state).toBe("needs_login");
    } finally {
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it("an agent that refuses the turn instead of the session (as Claude Code does): the session is needs_login, and starts again once logged in", async () => {
    rt = await startRuntime({ machines: [] });
    await rt.addSidecar("local", { MOCK_AGENT_REFUSE_AT: "prompt" });
    const started = await startSession(rt, "login-p");
    const acpId = started.result!.sessionId;
    const prompt = { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: acpId, prompt: [{ type: "text", text: "hello" }] } };
    const refused = await json<{ error?: { code: number } }>(rpc(rt, "login-p", prompt));
    expect(refused.error?.code).toBe(-32000);
    const { sessions } = await json<{ sessions: Session[] }>(rt.api("/v1/sessions"));
    const waiting = sessions.find((s) => s.sessionId === acpId)!;
    expect(waiting).toMatchObject({ state: "needs_login", waiting: { kind: "login" } });
    expect(waiting.login?.methods.map((m) => m.id)).toEqual(["mock-terminal", "mock-key", "mock-browser"]);
    expect((await json<{ state: string }>(rt.api("/v1/agents/mock-login/login"))).state).toBe("needs_login");

    const login = await json<{ state: string; started: string[] }>(
      post(rt, "/v1/agents/mock-login/login", { method: "mock-key", values: { MOCK_AGENT_KEY: "any" } }),
    );
    expect(login).toMatchObject({ state: "logged_in", started: [waiting.id] });
    const ready = await session(rt, waiting.id);
    expect(ready.state).toBe("idle");
    expect(ready.sessionId).not.toBe(acpId);
    await json(post(rt, `/v1/sessions/${waiting.id}/prompt`, { prompt: [{ type: "text", text: "hello again" }] }), 202);
    await waitFor(async () => {
      const { entries } = await json<{ entries: { kind: string; text?: string }[] }>(rt!.api(`/v1/sessions/${waiting.id}/transcript`));
      return entries.some((e) => e.kind === "text" && e.text?.includes("You said: hello again"));
    }, "the agent's answer after the login");
  });
});
