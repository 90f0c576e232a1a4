/**
 * The relay's route before the router (app.ts, `createRelayApp`), in workerd: `POST /v1/acp/{id}` through
 * the worker's entry (which sends it past the whole app's router) answers exactly as the whole app answers
 * it: a missing, malformed or unknown token (401 or 400, with the same challenge), a role or a machine
 * outside the token's scope (403), a machine that never connected (404), a body of another media type
 * (415), too large (413) or no JSON-RPC message (400), an answer it cannot send (406), and the agent's answer.
 * The message before Hono (http/relay-post.ts): it answers itself only where every check passes, with the
 * whole app's answer and audit line, and leaves every refusal to the relay app (a dropped check would answer).
 */
import { createExecutionContext, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp, createRelayApp } from "./app";
import { teamStub } from "./durable/stubs";
import { rememberMachine } from "./http/access";
import { relayPost, relayPostUrl } from "./http/relay-post";
import type { FakeSidecar } from "../test/workers/fake-sidecar";
import { sidecarsPerTest } from "../test/workers/requests";

const connect = sidecarsPerTest();
const whole = createApp();

interface Answer {
  status: number;
  headers: [string, string][];
  body: string;
}

async function answerOf(res: Response): Promise<Answer> {
  const headers = [...res.headers].filter(([name]) => name === "content-type" || name === "www-authenticate" || name.startsWith("acp-"));
  return { status: res.status, headers, body: await res.text() };
}

/** The same request through the worker's entry and through the whole app (its router), both answers. */
async function bothWays(path: string, init: RequestInit): Promise<[viaEntry: Answer, viaRouter: Answer]> {
  const url = `https://runtime.test${path}`;
  const viaEntry = await answerOf(await SELF.fetch(url, init));
  const ctx = createExecutionContext();
  const res = await whole.fetch(new Request(url, init), env, ctx);
  await waitOnExecutionContext(ctx);
  return [viaEntry, await answerOf(res)];
}

async function issue(body: Record<string, unknown>): Promise<string> {
  const { last } = await auditAfter(0);
  const res = await SELF.fetch("https://runtime.test/v1/tokens", {
    method: "POST",
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  await untilAudited(last, { method: "POST", route: "/v1/tokens", status: 201 });
  return ((await res.json()) as { token: string }).token;
}

const message = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/list", params: {} });
const headers = (token: string | null, more: Record<string, string> = {}) => ({
  ...(token ? { authorization: `Bearer ${token}` } : {}),
  "content-type": "application/json",
  accept: "application/json",
  ...more,
});

describe("POST /v1/acp/{id} through the worker's entry and through the whole app's router", () => {
  it("refuses alike: token, role, scope, machine, media type, size, body, what it answers, the server's id", async () => {
    const machine = "relay-route-refusals";
    const sidecar = await connect(machine);
    const viewer = await issue({ name: "relay-route-viewer", role: "viewer", machines: [machine] });
    const elsewhere = await issue({ name: "relay-route-elsewhere", role: "member", machines: ["another-machine"] });
    const path = `/machines/${machine}/v1/acp/s1`;
    const cases: [what: string, path: string, init: RequestInit, status: number][] = [
      ["no token", path, { method: "POST", headers: headers(null), body: message }, 401],
      ["an unknown token", path, { method: "POST", headers: headers("not-a-token"), body: message }, 401],
      ["an unknown issued token", path, { method: "POST", headers: headers(`art.0123456789abcdef.${"A".repeat(43)}`), body: message }, 401],
      ["another scheme", path, { method: "POST", headers: { ...headers(null), authorization: "Basic abc" }, body: message }, 401],
      ["a malformed header", path, { method: "POST", headers: { ...headers(null), authorization: "Bearer a b" }, body: message }, 400],
      ["a viewer", path, { method: "POST", headers: headers(viewer), body: message }, 403],
      ["a machine outside the scope", path, { method: "POST", headers: headers(elsewhere), body: message }, 403],
      ["a machine that never connected", "/machines/never-connected/v1/acp/s1", { method: "POST", headers: headers(env.API_TOKEN), body: message }, 404],
      ["no machine id", "/machines/-no-/v1/acp/s1", { method: "POST", headers: headers(env.API_TOKEN), body: message }, 400],
      ["no server id", `/machines/${machine}/v1/acp/not%20an%20id`, { method: "POST", headers: headers(env.API_TOKEN), body: message }, 400],
      ["an unknown agent", `${path}?agent=NOT%20AN%20AGENT`, { method: "POST", headers: headers(env.API_TOKEN), body: message }, 400],
      ["another media type", path, { method: "POST", headers: headers(env.API_TOKEN, { "content-type": "text/plain" }), body: message }, 415],
      ["a body over the limit", path, { method: "POST", headers: headers(env.API_TOKEN), body: "x".repeat(12 * 1024 * 1024) }, 413],
      ["no JSON", path, { method: "POST", headers: headers(env.API_TOKEN), body: "{oops" }, 400],
      ["no JSON-RPC message", path, { method: "POST", headers: headers(env.API_TOKEN), body: '{"jsonrpc":"1.0"}' }, 400],
      ["an answer it cannot send", path, { method: "POST", headers: headers(env.API_TOKEN, { accept: "text/html" }), body: message }, 406],
    ];
    for (const [what, at, init, status] of cases) {
      const [viaEntry, viaRouter] = await bothWays(at, init);
      expect(viaEntry.status, what).toBe(status);
      expect(viaEntry, what).toEqual(viaRouter);
    }
    expect(sidecar.received.filter((f) => f.t === "req" && f.op === "acp.post")).toEqual([]);
  });

  it("relays alike: the agent's answer (200) and a notification (202)", async () => {
    const machine = "relay-route-answers";
    const sidecar: FakeSidecar = await connect(machine);
    const path = `/machines/${machine}/v1/acp/s1?agent=mock`;
    const answers: Answer[] = [];
    for (const way of ["entry", "router"] as const) {
      const init = { method: "POST", headers: headers(env.API_TOKEN), body: message };
      const asked =
        way === "entry"
          ? SELF.fetch(`https://runtime.test${path}`, init)
          : (async () => {
              const ctx = createExecutionContext();
              const res = await whole.fetch(new Request(`https://runtime.test${path}`, init), env, ctx);
              await waitOnExecutionContext(ctx);
              return res;
            })();
      const call = await sidecar.call("acp.post");
      sidecar.answer(call, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { sessions: [] } }) });
      answers.push(await answerOf(await asked));
    }
    expect(answers[0]).toMatchObject({ status: 200, body: '{"jsonrpc":"2.0","id":1,"result":{"sessions":[]}}' });
    expect(answers[0]).toEqual(answers[1]);

    const notification = JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "x" } });
    const notified: Answer[] = [];
    for (const way of ["entry", "router"] as const) {
      const init = { method: "POST", headers: headers(env.API_TOKEN), body: notification };
      const asked =
        way === "entry"
          ? SELF.fetch(`https://runtime.test${path}`, init)
          : whole.fetch(new Request(`https://runtime.test${path}`, init), env, createExecutionContext());
      const call = await sidecar.call("acp.post");
      sidecar.answer(call, { status: 202 });
      notified.push(await answerOf(await asked));
    }
    expect(notified[0]?.status).toBe(202);
    expect(notified[0]).toEqual(notified[1]);
  });
});

/** The team's audit lines after `seq`, without their time and sequence number. */
async function auditAfter(seq: number): Promise<{ lines: unknown[]; last: number }> {
  const { entries } = await teamStub(env).readAudit({ limit: 500 });
  const added = entries.filter((e) => e.seq > seq).sort((a, b) => a.seq - b.seq);
  return { lines: added.map(({ atMs: _, seq: __, ...line }) => line), last: Math.max(seq, ...entries.map((e) => e.seq)) };
}

/**
 * Wait for the audit lines after `seq` to hold one matching each of `expected`: a request through
 * `SELF.fetch` appends its line after its answer (waitUntil), and one landing during a case would be
 * counted as that case's.
 */
async function untilAudited(seq: number, ...expected: Record<string, unknown>[]): Promise<void> {
  await vi.waitFor(
    async () => {
      const { lines } = await auditAfter(seq);
      for (const line of expected) expect(lines).toContainEqual(expect.objectContaining(line));
    },
    { timeout: 10_000 },
  );
}

type Way = "before Hono" | "router";

/** A request as a client over HTTP sends it: a body of known length says so (`Content-Length`). */
function withLength(init: RequestInit): RequestInit {
  if (typeof init.body !== "string") return init;
  const headers = new Headers(init.headers);
  headers.set("content-length", String(new TextEncoder().encode(init.body).byteLength));
  return { ...init, headers };
}

/**
 * One request through `relayPost` (with the relay app behind it, counting whether it was needed) and then
 * through the whole app, each with its answer and the audit lines it left; `answer` plays the sidecar.
 */
async function beforeHonoAndRouter(
  path: string,
  init: () => RequestInit,
  answer: (() => Promise<void>) | null = null,
  environment: typeof env = env,
): Promise<{ fellBack: boolean; answers: Record<Way, Answer>; audit: Record<Way, unknown[]> }> {
  const relayApp = createRelayApp();
  let fellBack = false;
  const behind = {
    fetch: (request: Request, e: typeof env, ctx: ExecutionContext) => {
      fellBack = true;
      return relayApp.fetch(request, e, ctx);
    },
  };
  let { last } = await auditAfter(0);
  const answers = {} as Record<Way, Answer>;
  const audit = {} as Record<Way, unknown[]>;
  for (const way of ["before Hono", "router"] as const) {
    const ctx = createExecutionContext();
    const request = new Request(path.startsWith("https:") ? path : `https://runtime.test${path}`, withLength(init()));
    const asked = way === "before Hono" ? relayPost(request, relayPostUrl(request)!, environment, ctx, behind) : whole.fetch(request, environment, ctx);
    await answer?.();
    answers[way] = await answerOf(await asked);
    await waitOnExecutionContext(ctx);
    const added = await auditAfter(last);
    audit[way] = added.lines;
    last = added.last;
  }
  return { fellBack, answers, audit };
}

describe("the message before Hono (http/relay-post.ts)", () => {
  it("answers itself where every check passes, as the whole app answers and audits it: a message, a session's first, a failed one, an offline machine, a revoked token", async () => {
    const machine = "relay-before-hono";
    const sidecar = await connect(machine);
    const member = await issue({ name: "relay-before-hono-member", role: "member", machines: [machine] });
    const path = `/machines/${machine}/v1/acp/s1`;
    const post =
      (token: string, body = message) =>
      () => ({ method: "POST", headers: headers(token), body });
    const answered = (status: 200 | 202, body?: string) => async () => {
      const call = await sidecar.call("acp.post");
      sidecar.answer(call, status === 202 ? { status: 202 } : { status: 200, body: body ?? "" });
    };
    const result = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { sessions: [] } });
    // The member's token once through the worker's entry: verified by its object, kept by this isolate.
    const first = SELF.fetch(`https://runtime.test${path}`, post(member)());
    await answered(200, result)();
    expect((await first).status).toBe(200);
    rememberMachine("relay-before-hono-offline"); // known to the isolate, no sidecar connected

    const cases: [
      what: string,
      path: string,
      init: () => RequestInit,
      answer: (() => Promise<void>) | null,
      status: number,
      audited: boolean,
      environment?: typeof env,
    ][] = [
      ["a message with API_TOKEN", path, post(env.API_TOKEN), answered(200, result), 200, false],
      ["a message with a kept issued token", path, post(member), answered(200, result), 200, false],
      ["a session's first message (naming its agent)", `${path}?agent=mock`, post(env.API_TOKEN), answered(200, result), 200, true],
      ["a notification", path, post(env.API_TOKEN, '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}'), answered(202), 202, false],
      ["the default machine, offline", "/v1/acp/s1", post(env.API_TOKEN), null, 503, true, { ...env, DEFAULT_MACHINE: "relay-before-hono-offline" }],
      ["no JSON", path, post(env.API_TOKEN, "{oops"), null, 400, true],
      ["no JSON-RPC message", path, post(member, '{"jsonrpc":"1.0"}'), null, 400, true],
      ["an offline machine", "/machines/relay-before-hono-offline/v1/acp/s1", post(env.API_TOKEN), null, 503, true],
    ];
    for (const [what, at, init, answer, status, audited, environment] of cases) {
      const { fellBack, answers, audit } = await beforeHonoAndRouter(at, init, answer, environment);
      expect(fellBack, what).toBe(false);
      expect(answers["before Hono"].status, what).toBe(status);
      expect(answers["before Hono"], what).toEqual(answers.router);
      expect(audit["before Hono"], what).toEqual(audit.router);
      expect(audit["before Hono"].length, what).toBe(audited ? 1 : 0);
    }

    // Revoked: the kept token reaches the machine's object, which refuses it at once (401), audited.
    const [tokenId] = member.split(".").slice(1, 2);
    const beforeRevoking = (await auditAfter(0)).last;
    expect((await SELF.fetch(`https://runtime.test/v1/tokens/${tokenId}`, { method: "DELETE", headers: headers(env.API_TOKEN) })).status).toBe(200);
    await untilAudited(beforeRevoking, { method: "DELETE", route: "/v1/tokens/{id}", status: 200 });
    const revoked = await beforeHonoAndRouter(path, post(member));
    expect(revoked.fellBack).toBe(false);
    expect(revoked.answers["before Hono"].status).toBe(401);
    expect(revoked.answers["before Hono"]).toEqual(revoked.answers.router);
    expect(revoked.audit["before Hono"]).toEqual(revoked.audit.router);
    expect(revoked.audit["before Hono"]).toMatchObject([{ status: 401, token: "relay-before-hono-member" }]);
  });

  it("leaves every refusal to the relay app, which answers and audits it as the whole app does", async () => {
    // Known to the isolate with no sidecar: a refusal answered here by mistake would be a quick 503, never a wait.
    const machine = "relay-before-hono-refusals";
    rememberMachine(machine);
    const viewer = await issue({ name: "relay-before-hono-viewer", role: "viewer", machines: [machine] });
    const elsewhere = await issue({ name: "relay-before-hono-elsewhere", role: "member", machines: ["another-machine"] });
    const path = `/machines/${machine}/v1/acp/s1`;
    const post =
      (token: string | null, more: Record<string, string> = {}, body: BodyInit = message) =>
      () => ({ method: "POST", headers: headers(token, more), body });
    // Both issued tokens kept by this isolate first (as after any message of theirs), so that only the role and the scope refuse them.
    const beforeKeeping = (await auditAfter(0)).last;
    for (const token of [viewer, elsewhere]) expect((await SELF.fetch(`https://runtime.test${path}`, post(token)())).status).toBe(403);
    // Both refusals audited before the cases count theirs.
    await untilAudited(beforeKeeping, { token: "relay-before-hono-viewer", status: 403 }, { token: "relay-before-hono-elsewhere", status: 403 });
    const previewEnv = { ...env, PREVIEW_DOMAIN: "preview.test" };
    const cases: [what: string, path: string, init: () => RequestInit, status: number, audited: boolean, environment?: typeof env][] = [
      ["no token", path, post(null), 401, true],
      ["an unknown token", path, post("not-a-token"), 401, true],
      ["an unknown issued token", path, post(`art.0123456789abcdef.${"A".repeat(43)}`), 401, true],
      ["another scheme", path, post(null, { authorization: "Basic abc" }), 401, true],
      ["a malformed header", path, post(null, { authorization: "Bearer a b" }), 400, true],
      ["a viewer (its token kept)", path, post(viewer), 403, true],
      ["a machine outside the scope (its token kept)", path, post(elsewhere), 403, true],
      ["a machine that never connected", "/machines/never-connected/v1/acp/s1", post(env.API_TOKEN), 404, true],
      ["no machine id", "/machines/-no-/v1/acp/s1", post(env.API_TOKEN), 400, true],
      ["no server id", `/machines/${machine}/v1/acp/not%20an%20id`, post(env.API_TOKEN), 400, true],
      ["an unknown agent", `${path}?agent=NOT%20AN%20AGENT`, post(env.API_TOKEN), 400, true],
      ["another media type", path, post(env.API_TOKEN, { "content-type": "text/plain" }), 415, true],
      ["a body over the limit", path, post(env.API_TOKEN, {}, "x".repeat(12 * 1024 * 1024)), 413, true],
      ["an answer it cannot send", path, post(env.API_TOKEN, { accept: "text/html" }), 406, true],
      ["a preview's host", `https://3000--laptop.preview.test${path}`, post(env.API_TOKEN), 401, false, previewEnv],
      // Over HTTP the Host header is the URL's host; here only the header says it: the fast path still leaves it.
      ["a preview's Host header", path, post(env.API_TOKEN, { host: "3000--laptop.preview.test" }), 503, true, previewEnv],
      // Said to be short, but chunked: the length does not decide (hono/body-limit counts what comes).
      [
        "a chunked body over the limit, its Content-Length small",
        path,
        post(env.API_TOKEN, { "transfer-encoding": "chunked", "content-length": "60" }, new TextEncoder().encode("x".repeat(12 * 1024 * 1024))),
        413,
        true,
      ],
      ["a percent-encoded machine", `/machines/relay%2Dbefore-hono-refusals/v1/acp/s1`, post(env.API_TOKEN), 503, true],
      ["a server id not of the common form", `/machines/${machine}/v1/acp/a..b`, post(env.API_TOKEN), 400, true],
    ];
    for (const [what, at, init, status, audited, environment] of cases) {
      const { fellBack, answers, audit } = await beforeHonoAndRouter(at, init, null, environment);
      expect(fellBack, what).toBe(true);
      expect(answers["before Hono"].status, what).toBe(status);
      expect(answers["before Hono"], what).toEqual(answers.router);
      expect(audit["before Hono"], what).toEqual(audit.router);
      expect(audit["before Hono"].length, what).toBe(audited ? 1 : 0);
    }
  });
});
