/**
 * The relay's route before the router (app.ts, `createRelayApp`), in workerd: `POST /v1/acp/{id}` through
 * the worker's entry (which sends it past the whole app's router) answers exactly as the whole app answers
 * it: a missing, malformed or unknown token (401 or 400, with the same challenge), a role or a machine
 * outside the token's scope (403), a machine that never connected (404), a body of another media type
 * (415), too large (413) or no JSON-RPC message (400), an answer it cannot send (406), and the agent's answer.
 */
import { createExecutionContext, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "./app";
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
  const res = await SELF.fetch("https://runtime.test/v1/tokens", {
    method: "POST",
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(201);
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
