/**
 * The relay route builder in-process: what a declared route hands to its operation, what it answers, what
 * it audits, and what its OpenAPI entry declares (the operation's own problems among them). The machine's
 * object is stood in by a recorder of its `call`; the real round trip is in test/processes.test.ts and beside.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../app";
import type { AppEnv, Env } from "../env";
import { relayRoute, wholeInput, withRelayRoutes } from "./relay-route";

const API_TOKEN = "at_relay-route-test-token";

const PROCESS = {
  id: "p1",
  command: "sleep",
  args: ["5"],
  createdAtMs: 1,
  interactive: false,
  tty: false,
  owner: "user",
  status: "exited",
  cwd: "/tmp",
  pid: null,
};

/** A worker whose machine's object records each `call` and answers it from `answers`, by operation. */
function fakeWorker(answers: Record<string, unknown>) {
  const calls: { op: string; args: unknown; timeoutMs: number | undefined }[] = [];
  const audit: { method: string; route: string; status: number }[] = [];
  const machine = {
    call: async (op: string, args: unknown, timeoutMs?: number) => {
      calls.push({ op, args, timeoutMs });
      return { ok: true, value: answers[op] };
    },
  };
  const team = {
    appendAudit: async (entry: (typeof audit)[number]) => void audit.push(entry),
    machineExists: async () => true,
  };
  const namespace = (stub: unknown) => ({ idFromName: (name: string) => name, get: () => stub });
  // A stand-in for the bindings: only what these routes reach (the machine's `call`, the team's audit).
  const env = { API_TOKEN, TUNNEL_SECRET: "ts_x", TEAM: namespace(team), MACHINE: namespace(machine), TOKEN: namespace({}) } as unknown as Env;
  const waiting: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => void waiting.push(p), passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext;
  const app = createApp();
  const request = (path: string, init: RequestInit = {}) =>
    app.request(`/machines/relay-test/v1${path}`, { ...init, headers: { authorization: `Bearer ${API_TOKEN}`, ...init.headers } }, env, ctx);
  return { request, calls, audit, settled: () => Promise.all(waiting) };
}

describe("a relay route", () => {
  it("hands its operation the arguments it reads from the path, query and body, and answers with its status", async () => {
    const worker = fakeWorker({
      "processes.signal": PROCESS,
      "processes.run": { exitCode: 0, signal: null, timedOut: false, durationMs: 5, stdout: "", stderr: "", stdoutTruncated: false, stderrTruncated: false },
      "processes.delete": { deleted: true },
      "processes.list": { processes: [PROCESS, { ...PROCESS, id: "p2", owner: "system" }] },
      "fs.entries": { entries: [], truncated: true },
    });

    const stopped = await worker.request("/processes/p1/stop", { method: "POST" });
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual(PROCESS);

    const ran = await worker.request("/processes/run", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "true", timeoutMs: 1_000 }),
    });
    expect(ran.status).toBe(200);

    const forgotten = await worker.request("/processes/p1", { method: "DELETE" });
    expect(forgotten.status).toBe(204);
    expect(await forgotten.text()).toBe("");

    const listed = await worker.request("/processes?owner=system");
    expect(((await listed.json()) as { processes: { id: string }[] }).processes.map((p) => p.id)).toEqual(["p2"]);

    const entries = await worker.request("/fs/entries?path=/tmp");
    expect(await entries.json()).toEqual([]);
    expect(entries.headers.get("x-entries-truncated")).toBe("true");

    expect(worker.calls).toEqual([
      { op: "processes.signal", args: { id: "p1", signal: "SIGTERM" }, timeoutMs: undefined },
      { op: "processes.run", args: expect.objectContaining({ command: "true", timeoutMs: 1_000 }), timeoutMs: 31_000 },
      { op: "processes.delete", args: { id: "p1" }, timeoutMs: undefined },
      { op: "processes.list", args: {}, timeoutMs: undefined },
      { op: "fs.entries", args: { path: "/tmp" }, timeoutMs: undefined },
    ]);

    // Every mutating call is on record with its route's pattern; reads are not.
    await worker.settled();
    expect(worker.audit.map((a) => [a.method, a.route, a.status])).toEqual([
      ["POST", "/machines/{machine}/v1/processes/{id}/stop", 200],
      ["POST", "/machines/{machine}/v1/processes/run", 200],
      ["DELETE", "/machines/{machine}/v1/processes/{id}", 204],
    ]);
  });

  it("reads the operation's arguments from the path, query and body together where the route does not say how", async () => {
    const worker = fakeWorker({ "processes.resize": { cols: 120, rows: 40 }, "fs.mkdir": { path: "/tmp/new" } });
    const resized = await worker.request("/processes/p1/terminal/resize", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ cols: 120, rows: 40 }),
    });
    expect(resized.status).toBe(200);
    await worker.request("/fs/mkdir?path=/tmp/new", { method: "POST" });
    // A body naming the path's field does not choose what the call acts on: its schema refuses the field
    // (and, for a body that would take it, the path's value wins: the test below).
    const aimed = await worker.request("/processes/p1/terminal/resize", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: "p2", cols: 80, rows: 24 }),
    });
    expect(aimed.status).toBe(400);
    expect(worker.calls.map(({ op, args }) => [op, args])).toEqual([
      ["processes.resize", { id: "p1", cols: 120, rows: 40 }],
      ["fs.mkdir", { path: "/tmp/new" }],
    ]);
  });

  it("takes a field the path and the query or body both name from the path, then the query: what the URL names is what is acted on", () => {
    const body = { id: "from-the-body", signal: "SIGTERM" };
    expect(wholeInput("processes.signal", { param: { id: "p-path" }, query: { id: "p-query" }, json: body })).toEqual({ id: "p-path", signal: "SIGTERM" });
    expect(wholeInput("processes.signal", { param: {}, query: { id: "p-query" }, json: body })).toEqual({ id: "p-query", signal: "SIGTERM" });
    expect(wholeInput("processes.signal", { param: undefined, query: undefined, json: body })).toEqual({ id: "from-the-body", signal: "SIGTERM" });
    // What the operation's own schema refuses is a 400's problem, before the machine is asked.
    expect(() => wholeInput("processes.signal", { param: { id: "p-path" }, query: {}, json: { signal: 9 } })).toThrow(/signal/);
  });

  it("refuses what its schemas refuse before the machine is asked", async () => {
    const worker = fakeWorker({});
    const wrongType = await worker.request("/processes/p1/input", { method: "POST", headers: { "content-type": "text/plain" }, body: "hello" });
    expect(wrongType.status).toBe(415);
    const badBody = await worker.request("/git/commit", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(badBody.status).toBe(400);
    expect(worker.calls).toEqual([]);
  });

  it("declares its access, its answer and the problems of its operation, its body, its machine and its own in the OpenAPI document", () => {
    const app = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
      relayRoute("post", "/agents/{agent}/install", {
        summary: "install",
        access: { role: "member", machine: true },
        op: "agents.install",
        params: z.object({ agent: z.string() }),
        body: z.object({ reinstall: z.boolean().optional() }),
        args: ({ param: { agent }, json }) => ({ agent, request: json }),
        answer: { status: 201, schema: z.object({ installed: z.boolean() }), description: "installed" },
        reply: (result) => ({ installed: !result.already_installed }),
        errors: ["payload_too_large"],
      }),
    ]);
    const operation = app.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "t", version: "1" } }).paths?.["/agents/{agent}/install"]?.post;
    expect(operation?.["x-required-role"]).toBe("member");
    expect(operation?.["x-machine-scoped"]).toBe(true);
    const described = Object.fromEntries(Object.entries(operation?.responses ?? {}).map(([status, r]) => [status, "description" in r ? r.description : ""]));
    expect(described).toEqual({
      "201": "installed",
      "400": "invalid_request; unsupported_agent",
      "401": "token_invalid",
      "403": "permission_denied",
      "404": "not_found",
      "409": "conflict",
      "413": "payload_too_large",
      "415": "unsupported_media_type",
      "500": "install_failed",
      "502": "package_unavailable",
      "503": "machine_offline",
      "504": "timeout",
    });
  });
});
