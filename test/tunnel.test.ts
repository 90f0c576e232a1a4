/**
 * The foundation against the real runtime: workerd, real sidecar processes, real WebSockets.
 */
import { readFileSync } from "node:fs";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TUNNEL_PROTOCOL_VERSION } from "@agent-runtime/protocol/frames";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";
import { ROOT } from "../dev/runtime";
import { API_PATHS_FILE, apiPathsSource } from "../scripts/api-paths-source";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["alpha", "beta"], vars: { DEFAULT_MACHINE: "" } });
});
afterAll(async () => {
  await rt?.dispose();
});

type MachineList = { machines: { id: string; connected: boolean; sidecarVersion: string | null }[] };

describe("authentication", () => {
  it("answers health without a token", async () => {
    const res = await fetch(`${rt.url}/v1/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it.each([
    ["no header", undefined],
    ["a wrong token", "Bearer nope"],
    ["a token with a different scheme", `Basic ${Buffer.from("a:b").toString("base64")}`],
  ])("refuses %s with 401 problem+json", async (_what, header) => {
    const res = await fetch(`${rt.url}/v1/machines`, { headers: header ? { authorization: header } : {} });
    expect(res.status).toBe(401);
    const problem = await problemOf(res);
    expect(errorCode(problem)).toBe("token_invalid");
    expect(JSON.stringify(problem)).not.toContain(rt.token);
  });

  it("answers an empty or malformed bearer with 400 invalid_request (RFC 6750)", async () => {
    for (const header of ["Bearer ", "Bearer a b"]) {
      const res = await fetch(`${rt.url}/v1/machines`, { headers: { authorization: header } });
      expect(res.status).toBe(400);
      expect(res.headers.get("www-authenticate")).toContain('error="invalid_request"');
      expect(errorCode(await problemOf(res))).toBe("invalid_request");
    }
  });

  it("refuses a machine's health without a token", async () => {
    const res = await fetch(`${rt.url}/machines/alpha/v1/health`);
    expect(res.status).toBe(401);
  });

  it("accepts any of several comma-separated API tokens", async () => {
    const multi = await startRuntime({ machines: [], vars: { API_TOKEN: "first-token, second-token" } });
    try {
      for (const token of ["first-token", "second-token"]) {
        const res = await fetch(`${multi.url}/v1/machines`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(200);
      }
      // The list itself is no token (and a comma is not a character a bearer token has).
      expect((await fetch(`${multi.url}/v1/machines`, { headers: { authorization: "Bearer first-token,second-token" } })).status).toBe(400);
      expect((await fetch(`${multi.url}/v1/machines`, { headers: { authorization: "Bearer third-token" } })).status).toBe(401);
    } finally {
      await multi.dispose();
    }
  });
});

describe("machines", () => {
  it("lists both connected machines with what their sidecar reported", async () => {
    const res = await rt.api("/v1/machines");
    expect(res.status).toBe(200);
    const body = (await res.json()) as MachineList;
    expect(body.machines.map((m) => [m.id, m.connected])).toEqual([
      ["alpha", true],
      ["beta", true],
    ]);
    expect(body.machines[0]!.sidecarVersion).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("routes /machines/{id}/v1 to that machine, each with its own processes", async () => {
    const start = await rt.api("/machines/alpha/v1/acp/only-on-alpha?agent=mock", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }),
    });
    expect(start.status).toBe(200);
    const onAlpha = (await (await rt.api("/machines/alpha/v1/acp")).json()) as { servers: { serverId: string }[] };
    const onBeta = (await (await rt.api("/machines/beta/v1/acp")).json()) as { servers: { serverId: string }[] };
    expect(onAlpha.servers.map((s) => s.serverId)).toContain("only-on-alpha");
    expect(onBeta.servers.map((s) => s.serverId)).not.toContain("only-on-alpha");
    expect((await rt.api("/machines/alpha/v1/acp/only-on-alpha", { method: "DELETE" })).status).toBe(204);
  });

  it("never picks a machine nobody named: /v1 without DEFAULT_MACHINE is 400, listing the machines", async () => {
    const res = await rt.api("/v1/acp");
    expect(res.status).toBe(400);
    const problem = await problemOf(res);
    expect(problem).toMatchObject({ machines: ["alpha", "beta"] });
    expect(problem.detail).toContain("/machines/{machine}/v1");
  });

  it("answers 404 at once for a machine that never connected (503 for one that did: test/idle-cost.test.ts)", async () => {
    const started = Date.now();
    const res = await rt.api("/machines/gamma/v1/acp");
    expect(res.status).toBe(404);
    expect(errorCode(await problemOf(res))).toBe("not_found");
    expect(Date.now() - started).toBeLessThan(5_000); // "at once": far below any time-out, not a hang
  });
});

describe("tunnel", () => {
  /** Try to open a tunnel as a sidecar would; the HTTP status that refused it (or 101 if it opened). */
  function tunnelStatus(machine: string, headers: Record<string, string>): Promise<number> {
    return new Promise<number>((resolve) => {
      const ws = new WebSocket(`${rt.url.replace("http", "ws")}/_tunnel/${machine}`, { headers });
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.on("open", () => {
        ws.terminate();
        resolve(101);
      });
      ws.on("error", () => undefined);
    });
  }

  it("refuses a sidecar whose token belongs to another machine, before the upgrade", async () => {
    const tokenForAlpha = await mintMachineToken(rt.tunnelSecret, "alpha");
    expect(await tunnelStatus("beta", { authorization: `Bearer ${tokenForAlpha}` })).toBe(401);
  });

  it("refuses a forged or missing token, and a plain request to the tunnel path", async () => {
    expect(await tunnelStatus("alpha", { authorization: "Bearer mt1.alpha.forged" })).toBe(401);
    expect(await tunnelStatus("alpha", {})).toBe(401);
    const plain = await fetch(`${rt.url}/_tunnel/alpha`);
    expect(plain.status).toBe(401);
    expect(errorCode(await problemOf(plain))).toBe("token_invalid");
  });

  it("answers a frame it cannot read with a `bad` frame naming why, and keeps the tunnel open", async () => {
    const token = await mintMachineToken(rt.tunnelSecret, "raw-frames");
    const ws = new WebSocket(`${rt.url.replace("http", "ws")}/_tunnel/raw-frames`, { headers: { authorization: `Bearer ${token}` } });
    const frames: { t: string; error?: string }[] = [];
    ws.on("message", (data) => frames.push(JSON.parse(data.toString()) as { t: string; error?: string }));
    await new Promise<void>((resolve) => ws.on("open", () => resolve()));
    ws.send(JSON.stringify({ t: "hello", protocol: TUNNEL_PROTOCOL_VERSION, machine: "raw-frames", sidecarVersion: "0.1.0", platform: "test" }));
    await waitFor(async () => frames.some((f) => f.t === "welcome"), "the welcome");
    ws.send('{"t":"res","id":"nobody","ok":"yes"}');
    ws.send("not json at all");
    // Binary frames: one too short for its header, one whose bytes have no place (an `end`), a packed `ev`
    // that does not say which bytes are which event.
    const binary = (control: string) => {
      const header = Buffer.from(control);
      const length = Buffer.alloc(4);
      length.writeUInt32BE(header.length);
      return Buffer.concat([length, header, Buffer.from("bytes")]);
    };
    ws.send(Buffer.from([0, 0, 9]));
    ws.send(binary('{"t":"end","sub":"s","end":{"code":"exited","json":"{}"}}'));
    ws.send(binary('{"t":"ev","sub":"s","events":[]}'));
    await waitFor(async () => frames.filter((f) => f.t === "bad").length === 5, "five bad-frame answers");
    expect(frames.filter((f) => f.t === "bad").map((f) => f.error)).toEqual([
      expect.stringContaining('frame "res" refused'),
      expect.stringContaining("not JSON"),
      expect.stringContaining("without its header"),
      expect.stringContaining("no place for its bytes"),
      expect.stringContaining('frame "ev" refused: pieces'),
    ]);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });

  it("says goodbye to a sidecar of the tunnel protocol before binary frames, telling it to update", async () => {
    const token = await mintMachineToken(rt.tunnelSecret, "protocol-one");
    const ws = new WebSocket(`${rt.url.replace("http", "ws")}/_tunnel/protocol-one`, { headers: { authorization: `Bearer ${token}` } });
    const frames: { t: string; reason?: string }[] = [];
    ws.on("message", (data) => frames.push(JSON.parse(data.toString()) as { t: string; reason?: string }));
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    await new Promise<void>((resolve) => ws.on("open", () => resolve()));
    ws.send(JSON.stringify({ t: "hello", protocol: 1, machine: "protocol-one", sidecarVersion: "0.0.9", platform: "test" }));
    expect(await closed).toBe(4002);
    expect(frames).toEqual([{ t: "bye", reason: expect.stringContaining(`this worker speaks ${TUNNEL_PROTOCOL_VERSION}); update the sidecar`) }]);
  });

  it("a sidecar refused for its token exits with code 2 and says why", async () => {
    const { startSidecar } = await import("../dev/runtime");
    const bad = await startSidecar({ url: rt.url, machine: "delta", tunnelSecret: "not-the-secret", dataDir: `${rt.dir}/delta` });
    expect(await bad.stop("SIGCONT")).toBe(2);
    expect(bad.logs()).toContain("refused this machine's token");
  });

  it("reconnects by itself after the tunnel drops, and the machine answers again", async () => {
    const beta = rt.sidecars.get("beta")!;
    process.kill(beta.child.pid!, "SIGUSR2"); // fault drill: the sidecar cuts its socket without a close handshake
    await waitFor(async () => beta.logs().includes("tunnel closed"), "the drop to be noticed");
    await beta.connected(); // the second "connected" line: it came back by itself
    const res = await rt.api("/machines/beta/v1/acp");
    expect(res.status).toBe(200);
    const machines = (await (await rt.api("/v1/machines")).json()) as MachineList;
    expect(machines.machines.find((m) => m.id === "beta")?.connected).toBe(true);
  });

  it("shows a machine as disconnected once its sidecar stops, and its routes answer 503", async () => {
    const extra = await rt.addSidecar("epsilon");
    expect(await extra.stop("SIGTERM")).toBe(0); // a clean shutdown exits 0
    const machines = (await (await rt.api("/v1/machines")).json()) as MachineList;
    expect(machines.machines.find((m) => m.id === "epsilon")?.connected).toBe(false);
    expect((await rt.api("/machines/epsilon/v1/acp")).status).toBe(503);
  });
});

describe("errors", () => {
  it("answers malformed JSON with 400 problem+json, never 500", async () => {
    const res = await rt.api("/machines/alpha/v1/acp/x?agent=mock", { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    expect(res.status).toBe(400);
    expect(errorCode(await problemOf(res))).toBe("invalid_request");
  });

  it("answers an unknown route with 404 problem+json", async () => {
    for (const path of ["/v1/nope", "/nope", "/machines/alpha/v1/nope"]) {
      const res = await rt.api(path);
      expect(res.status).toBe(404);
      expect(errorCode(await problemOf(res))).toBe("not_found");
    }
  });

  it("refuses an invalid machine id in the path", async () => {
    const res = await rt.api("/machines/..%2Fetc/v1/acp");
    expect([400, 404]).toContain(res.status);
    await problemOf(res);
  });
});

describe("secrets", () => {
  it("never appear in answers, in the sidecar's logs, or in the environment of processes it starts", async () => {
    const machineToken = await mintMachineToken(rt.tunnelSecret, "alpha");
    const spawned = await rt.api("/machines/alpha/v1/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "env" }),
    });
    const { id } = (await spawned.json()) as { id: string };
    const env = await waitFor(async () => {
      const logs = (await (await rt.api(`/machines/alpha/v1/processes/${id}/logs`)).json()) as { entries: { data: string }[] };
      const text = logs.entries.map((e) => e.data).join("");
      return text.includes("PATH=") ? text : null;
    }, "the env output");
    const answers = await Promise.all(
      ["/v1/machines", "/machines/alpha/v1/agents", "/machines/alpha/v1/processes", "/v1/config/skills/status"].map(async (p) => (await rt.api(p)).text()),
    );
    for (const secret of [rt.token, rt.tunnelSecret, machineToken]) {
      expect(env).not.toContain(secret);
      for (const answer of answers) expect(answer).not.toContain(secret);
      for (const sidecar of rt.sidecars.values()) expect(sidecar.logs()).not.toContain(secret);
    }
    expect(env).not.toContain("AGENT_RUNTIME_TOKEN");
  });
});

describe("the OpenAPI document", () => {
  it("is served at /v1/openapi.json, generated from the route schemas, with every route and its errors", async () => {
    const res = await rt.api("/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      servers: { url: string }[];
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }>; [extension: `x-${string}`]: unknown }>>;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.servers.map((s) => s.url)).toEqual(["/", "/machines/{machine}"]);
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(routes.sort()).toEqual(
      [
        "GET /health",
        "GET /machines",
        "POST /acp/{server_id}",
        "GET /acp/{server_id}",
        "DELETE /acp/{server_id}",
        "GET /acp",
        "GET /sessions",
        "GET /sessions/events",
        "GET /sessions/{id}",
        "DELETE /sessions/{id}",
        "GET /sessions/{id}/transcript",
        "POST /sessions/{id}/continue",
        "POST /sessions/{id}/permission",
        "GET /sessions/{id}/changes",
        "GET /sessions/{id}/changes/diff",
        "POST /sessions/{id}/revert",
        "POST /sessions/{id}/prompt",
        "DELETE /sessions/{id}/queue/{entry}",
        "POST /sessions/{id}/elicitation",
        "POST /tasks",
        "GET /tasks",
        "GET /tasks/{id}",
        "POST /tasks/{id}/cancel",
        "POST /attempts",
        "GET /attempts",
        "GET /attempts/{id}",
        "GET /attempts/{id}/diff",
        "POST /attempts/{id}/pick",
        "POST /attempts/{id}/discard",
        "POST /attempts/{id}/cancel",
        "POST /schedules",
        "GET /schedules",
        "GET /schedules/{id}",
        "PATCH /schedules/{id}",
        "DELETE /schedules/{id}",
        "POST /triggers",
        "GET /triggers",
        "GET /triggers/{id}",
        "DELETE /triggers/{id}",
        "POST /triggers/{id}/github",
        "GET /git/status",
        "POST /git/commit",
        "POST /git/push",
        "POST /git/pull-request",
        "GET /worktrees",
        "DELETE /worktrees",
        "POST /notifications/subscriptions",
        "GET /notifications/subscriptions",
        "PATCH /notifications/subscriptions/{id}",
        "DELETE /notifications/subscriptions/{id}",
        "POST /notifications/subscriptions/{id}/test",
        "GET /notifications/deliveries",
        "GET /notifications/vapid",
        "GET /processes",
        "POST /processes",
        "POST /processes/run",
        "POST /processes/{id}/terminal/resize",
        "GET /processes/config",
        "POST /processes/config",
        "GET /processes/{id}",
        "DELETE /processes/{id}",
        "GET /processes/{id}/logs",
        "POST /processes/{id}/input",
        "POST /processes/{id}/stop",
        "POST /processes/{id}/kill",
        "GET /agents",
        "GET /agents/{agent}",
        "POST /agents/{agent}/install",
        "GET /agents/{agent}/login",
        "POST /agents/{agent}/login",
        "DELETE /agents/{agent}/login",
        "POST /agents/{agent}/login/elicitation",
        "GET /usage",
        "GET /registry/agents",
        "GET /config/skills",
        "PUT /config/skills",
        "GET /config/skills/status",
        "GET /whoami",
        "GET /tokens",
        "POST /tokens",
        "DELETE /tokens/{id}",
        "GET /audit",
        "POST /machine-tokens",
        "DELETE /machine-tokens/{machine}",
        "GET /fs/entries",
        "GET /fs/file",
        "PUT /fs/file",
        "DELETE /fs/entry",
        "POST /fs/mkdir",
        "POST /fs/move",
        "GET /fs/stat",
        "POST /fs/upload-batch",
        "GET /processes/{id}/terminal/ws",
        "POST /tickets",
        "POST /signin",
        "DELETE /signin",
        "DELETE /config/skills",
        "GET /config/mcp",
        "PUT /config/mcp",
        "DELETE /config/mcp",
        "GET /config/mcp/status",
        "GET /config/agents",
        "PUT /config/agents",
        "GET /config/agents/status",
        "GET /config/policy",
        "PUT /config/policy",
        "GET /config/policy/status",
        "POST /config/policy/test",
        "GET /ports",
        "POST /ports/{port}/preview",
      ]
        .map((route) => route.replace(" /", " /v1/")) // the API, under /v1
        .concat(["POST /acp", "GET /acp", "DELETE /acp"]) // ACP's remote transport beside it
        .sort(),
    );
    // Every route but health declares the role it needs (and whether it acts on one machine).
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods) as [string, Record<string, unknown>][]) {
        if (path === "/v1/health" || path === "/v1/triggers/{id}/github") continue; // the two routes a token does not open
        expect(["viewer", "member", "admin"], `${method} ${path}`).toContain(op["x-required-role"]);
        expect(typeof op["x-machine-scoped"], `${method} ${path}`).toBe("boolean");
      }
    }
    // Every route documents its errors as problem+json (401 at least), and the resources are named schemas.
    for (const [route, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
        expect(errors.length, `${method} ${route}`).toBeGreaterThan(0);
        for (const [, response] of errors) expect(Object.keys(response.content ?? {})).toEqual(["application/problem+json"]);
      }
    }
    for (const name of [
      "JsonRpcMessage",
      "InstallRequest",
      "InstallResult",
      "Artifact",
      "Process",
      "AgentInfo",
      "Capabilities",
      "SkillsConfig",
      "SkillSource",
      "FsEntry",
      "FsStat",
      "McpConfig",
      "McpServerConfig",
      "Problem",
    ]) {
      expect(doc.components.schemas).toHaveProperty(name);
    }
    expect(doc.components.securitySchemes).toHaveProperty("bearer");
  });

  it("types the dashboard's API client: the committed paths match the document served now", async () => {
    const doc = await (await rt.api("/v1/openapi.json")).json();
    const committed = readFileSync(`${ROOT}/${API_PATHS_FILE}`, "utf8");
    // A route's schema changed without the dashboard's types following it: `npm run api-types` writes them.
    expect(committed === (await apiPathsSource(doc)), `${API_PATHS_FILE} is out of date: run npm run api-types`).toBe(true);
  });
});
