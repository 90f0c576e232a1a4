/**
 * The worker's routes in-process (`app.request`), with the Durable Objects they call stood in by small
 * recorders: authentication, the default machine, validation and errors, without workerd. What needs
 * the real objects and a sidecar is in test/*.test.ts.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "./app";
import type { Env } from "./env";

const API_TOKEN = "at_in-process-test-token";

/** `stubs`: what the machine's object answers, and team methods to answer otherwise (a machine that exists). */
function fakeEnv(vars: Partial<Env> = {}, stubs: { machine?: object; team?: object } = {}) {
  const audit: { token: string; status: number; route: string; method: string }[] = [];
  const team = {
    appendAudit: async (entry: (typeof audit)[number]) => void audit.push(entry),
    listMachines: async () => ({ machines: [{ id: "laptop" }, { id: "desktop" }], nextAfter: null }),
    machineExists: async () => false,
    ...stubs.team,
  };
  const namespace = (stub: unknown) => ({ idFromName: (name: string) => name, get: () => stub });
  // The static files: only the page (Workers Static Assets itself runs in test/dashboard.test.ts).
  const assets = {
    fetch: async (request: Request) =>
      new URL(request.url).pathname === "/"
        ? new Response("<!doctype html><title>agent-runtime</title>", { headers: { "content-type": "text/html" } })
        : new Response("not found", { status: 404 }),
  };

  const env = {
    API_TOKEN,
    TUNNEL_SECRET: "ts_x",
    TEAM: namespace(team),
    MACHINE: namespace(stubs.machine ?? {}),
    TOKEN: namespace({}),
    ASSETS: assets,
    ...vars,
  } as unknown as Env;
  const waiting: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => void waiting.push(p), passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext;
  return { env, ctx, audit, settled: () => Promise.all(waiting) };
}

const app = createApp();

describe("the worker in-process", () => {
  it("serves the dashboard at every view's address, and never in place of the API under it", async () => {
    const { env, ctx } = fakeEnv();
    for (const path of [
      "/",
      "/sessions",
      "/sessions/ses-0123456789abcdef-laptop",
      "/machines",
      "/machines/laptop",
      "/machines/laptop/files",
      "/team",
      "/team/mcp",
      "/admin",
    ]) {
      const res = await app.request(path, {}, env, ctx);
      expect(res.headers.get("content-type"), path).toContain("text/html");
      expect(res.headers.get("content-security-policy"), path).toContain("script-src 'self';");
    }
    for (const path of [
      "/machines/laptop/v1/processes",
      "/machines/laptop/v1/processes/p1/terminal/ws",
      "/machines/laptop/v1/fs/files",
      "/machines/laptop/other",
    ]) {
      const res = await app.request(path, {}, env, ctx);
      expect(res.headers.get("content-type"), path).toBe("application/problem+json");
    }
  });

  it("answers health without a token", async () => {
    const { env, ctx } = fakeEnv();
    const res = await app.request("/v1/health", {}, env, ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("refuses a missing or unknown token with 401, WWW-Authenticate and an audit entry", async () => {
    const { env, ctx, audit, settled } = fakeEnv();
    const missing = await app.request("/v1/processes", {}, env, ctx);
    expect(missing.status).toBe(401);
    expect(missing.headers.get("content-type")).toBe("application/problem+json");
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="agent-runtime"');
    const wrong = await app.request("/v1/processes", { headers: { authorization: "Bearer nope" } }, env, ctx);
    expect(wrong.headers.get("www-authenticate")).toContain('error="invalid_token"');
    await settled();
    expect(audit.map((a) => [a.token, a.status, a.method, a.route])).toEqual([
      ["(no token)", 401, "GET", "/v1/processes"],
      ["(unknown token)", 401, "GET", "/v1/processes"],
    ]);
  });

  it("answers a malformed Bearer header with 400 invalid_request (RFC 6750), audited", async () => {
    const { env, ctx, audit, settled } = fakeEnv();
    for (const authorization of ["Bearer two words", "Bearer", "Bearer a,b"]) {
      const res = await app.request("/v1/processes", { headers: { authorization } }, env, ctx);
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agent-runtime", error="invalid_request"');
      expect(await res.json()).toMatchObject({ type: "urn:agent-runtime:error:invalid_request" });
    }
    await settled();
    expect(audit.map((a) => [a.token, a.status])).toEqual([
      ["(malformed header)", 400],
      ["(malformed header)", 400],
      ["(malformed header)", 400],
    ]);
  });

  it("ignores an API_TOKEN a Bearer header cannot carry, and keeps the others", async () => {
    const { env, ctx } = fakeEnv({ API_TOKEN: `bad:token,${API_TOKEN}` });
    const ok = await app.request("/v1/processes", { headers: { authorization: `Bearer ${API_TOKEN}` } }, env, ctx);
    expect(ok.status).toBe(400); // authenticated: it got as far as asking which machine (there are two)
    expect(await ok.json()).toMatchObject({ machines: ["laptop", "desktop"] });
    const refused = await app.request("/v1/processes", { headers: { authorization: "Bearer bad:token" } }, env, ctx);
    expect(refused.status).toBe(400); // not a token a header can carry: never a match
  });

  it("takes ?access_token= only on an SSE or WebSocket GET", async () => {
    const { env, ctx } = fakeEnv({ DEFAULT_MACHINE: "ghost" });
    const sse = await app.request(`/v1/processes/p1/logs?follow=true&access_token=${API_TOKEN}`, { headers: { accept: "text/event-stream" } }, env, ctx);
    expect(sse.status).toBe(404); // authenticated: it got as far as the (unknown) machine
    const plain = await app.request(`/v1/processes?access_token=${API_TOKEN}`, {}, env, ctx);
    expect(plain.status).toBe(401);
    const post = await app.request(`/v1/processes?access_token=${API_TOKEN}`, { method: "POST", headers: { accept: "text/event-stream" } }, env, ctx);
    expect(post.status).toBe(401);
  });

  it("never guesses a machine: without DEFAULT_MACHINE, /v1 is a 400 listing the machines", async () => {
    const { env, ctx } = fakeEnv();
    const res = await app.request("/v1/processes", { headers: { authorization: `Bearer ${API_TOKEN}` } }, env, ctx);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ machines: ["laptop", "desktop"], type: "urn:agent-runtime:error:invalid_request" });
  });

  it("answers a machine nobody connected with 404, before reaching any machine object", async () => {
    const { env, ctx } = fakeEnv({ DEFAULT_MACHINE: "ghost" });
    const res = await app.request("/v1/processes", { headers: { authorization: `Bearer ${API_TOKEN}` } }, env, ctx);
    expect(res.status).toBe(404);
    expect((await res.json()) as { detail: string }).toMatchObject({ detail: "no machine 'ghost' has ever connected to this deployment" });
  });

  it("validates bodies with the route's schema, naming the field", async () => {
    const { env, ctx } = fakeEnv();
    const res = await app.request(
      "/v1/tokens",
      {
        method: "POST",
        headers: { authorization: `Bearer ${API_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "x", role: "root" }),
      },
      env,
      ctx,
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: { field: string }[] }).errors.map((e) => e.field)).toEqual(["role"]);
  });

  it("answers the SDK's desktop calls with one clear 501 problem", async () => {
    const { env, ctx } = fakeEnv();
    for (const [method, path] of [
      ["GET", "/v1/desktop/screenshot"],
      ["POST", "/machines/laptop/v1/desktop/mouse/click"],
    ]) {
      const res = await app.request(path!, { method, headers: { authorization: `Bearer ${API_TOKEN}` } }, env, ctx);
      expect(res.status, path).toBe(501);
      expect(((await res.json()) as { detail: string }).detail).toContain("not their desktop");
    }
  });

  it("answers an unknown route with a 404 problem", async () => {
    const { env, ctx } = fakeEnv();
    const res = await app.request("/v2/nothing", {}, env, ctx);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
  });
  it("serves ACP's remote transport beside /v1, behind the same token and machine checks", async () => {
    const { env, ctx, audit, settled } = fakeEnv({ DEFAULT_MACHINE: "laptop" });
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } });
    const unauthenticated = await app.request("/acp?agent=mock", { method: "POST", headers: { "content-type": "application/json" }, body }, env, ctx);
    expect(unauthenticated.status).toBe(401);
    const auth = { authorization: `Bearer ${API_TOKEN}`, "content-type": "application/json" };
    const unknownMachine = await app.request("/machines/desktop/acp?agent=mock", { method: "POST", headers: auth, body }, env, ctx);
    expect(unknownMachine.status).toBe(404);
    expect(((await unknownMachine.json()) as { detail: string }).detail).toContain("'desktop'");
    await settled();
    expect(audit.map((a) => [a.status, a.method, a.route])).toEqual([
      [401, "POST", "/acp"],
      [404, "POST", "/machines/{machine}/acp"],
    ]);
  });

  it("parses what crosses the RPC boundary from the machine's object: an answer of the wrong shape is a 500, never passed on", async () => {
    const machine: { acpList: () => Promise<unknown> } = { acpList: async () => ({ ok: true, value: { servers: "not a list" } }) };
    const { env, ctx } = fakeEnv({}, { machine, team: { machineExists: async () => true } });
    const res = await app.request("/machines/rpc-shape/v1/acp", { headers: { authorization: `Bearer ${API_TOKEN}` } }, env, ctx);
    expect(res.status).toBe(500);
    expect(((await res.json()) as { detail: string }).detail).toContain("acp.list");
    machine.acpList = async () => ({ ok: true, value: { servers: [] } });
    expect(await (await app.request("/machines/rpc-shape/v1/acp", { headers: { authorization: `Bearer ${API_TOKEN}` } }, env, ctx)).json()).toEqual({
      servers: [],
    });
  });
});
