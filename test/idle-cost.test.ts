/**
 * An idle machine costs nothing: heartbeats are answered by the runtime without running the machine
 * object's code, the team object is written only when a machine connects or disconnects, a half-open
 * tunnel is noticed and redialed, a client's request for an unknown machine creates no object, and a
 * reconnect with an unchanged configuration re-applies nothing. Counters are read from the instrumented
 * worker's objects (dev/instrumented-worker.ts: what the runtime ran of them, from outside), through
 * Miniflare's RPC, which does not count as a use.
 */
import { existsSync } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ObjectStats } from "../dev/object-stats";
import { startSidecar } from "../dev/runtime";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type MachineStats = ObjectStats;
type TeamStats = ObjectStats;

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: [], persist: true, instrumented: true });
  await rt.addSidecar("local", { AGENT_RUNTIME_HEARTBEAT_MS: "150" });
});
afterAll(async () => {
  await rt?.dispose();
});

async function machineStats(machine: string): Promise<MachineStats> {
  const ns = await rt.worker.mf.getDurableObjectNamespace("MACHINE");
  return (ns.get(ns.idFromName(machine)) as unknown as { debugStats(): Promise<MachineStats> }).debugStats();
}

async function teamStats(): Promise<TeamStats> {
  const ns = await rt.worker.mf.getDurableObjectNamespace("TEAM");
  return (ns.get(ns.idFromName("team")) as unknown as { debugStats(): Promise<TeamStats> }).debugStats();
}

describe("an idle machine", () => {
  it("is kept alive by heartbeats that never run the machine object's code nor write to the team", async () => {
    const before = await machineStats("local");
    const teamBefore = await teamStats();
    // The counters count: connecting ran the machine's object (the upgrade, the hello) and wrote to the team.
    expect(before.invocations.fetch).toBeGreaterThan(0);
    expect(before.invocations.message).toBeGreaterThan(0);
    expect(teamBefore.invocations.rpc).toBeGreaterThan(0);
    expect(teamBefore.writes).toBeGreaterThan(0);
    const firstPing = before.lastPingMs ?? 0;
    // Ten heartbeats later (150 ms each), the runtime has answered every one...
    const after = await waitFor(async () => {
      const s = await machineStats("local");
      return s.lastPingMs !== null && s.lastPingMs - firstPing >= 1500 ? s : null;
    }, "ten heartbeats");
    // ...and not one of them reached the object's code or the team object. What does reach it meanwhile is
    // the sidecar saying the machine's listening ports changed (other test files open and close servers on
    // this machine as a developer's tools do on a laptop): those messages, and only those, are let through.
    const portsFrames = after.portsFrames - before.portsFrames;
    expect(after.invocations).toEqual({ ...before.invocations, message: before.invocations.message + portsFrames });
    expect(await teamStats()).toEqual(teamBefore);
    expect(rt.sidecars.get("local")!.logs()).not.toContain("no answer to the tunnel's heartbeat");
  });

  it("is told when what listens on its machine changes: one message a change, the only ones an idle tunnel carries", async () => {
    const before = await machineStats("local");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const after = await waitFor(async () => {
        const s = await machineStats("local");
        return s.portsFrames > before.portsFrames ? s : null;
      }, "the sidecar to say its ports changed");
      expect(after.invocations).toEqual({ ...before.invocations, message: before.invocations.message + after.portsFrames - before.portsFrames });
    } finally {
      server.close();
    }
  });

  it("is listed as connected without any heartbeat bookkeeping", async () => {
    const { machines } = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; connected: boolean }[] };
    expect(machines).toContainEqual(expect.objectContaining({ id: "local", connected: true }));
  });
});

/** A TCP relay to the worker that can go silent: the sockets stay open, nothing passes (a half-open tunnel). */
async function startRelay(target: URL): Promise<{ url: string; freeze(): void; close(): void }> {
  const frozen: Socket[] = [];
  const live: [Socket, Socket][] = [];
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
    live.push([client, upstream]);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    freeze() {
      for (const [client, upstream] of live.splice(0)) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
        frozen.push(client, upstream);
      }
    },
    close() {
      for (const socket of frozen) socket.destroy();
      server.close();
    },
  };
}

describe("a half-open tunnel", () => {
  it("is noticed by the sidecar (no pong for two heartbeats) and redialed", async () => {
    const relay = await startRelay(new URL(rt.url));
    const dir = join(rt.dir, "half-open");
    await mkdir(dir, { recursive: true });
    const sidecar = await startSidecar({
      url: relay.url,
      machine: "flaky",
      tunnelSecret: rt.tunnelSecret,
      dataDir: dir,
      workdir: dir,
      env: { AGENT_RUNTIME_HEARTBEAT_MS: "200", AGENT_RUNTIME_RECONNECT_SPREAD_MS: "50" },
    });
    try {
      await sidecar.connected();
      relay.freeze(); // the network drops the connection silently: no close, no error, nothing
      await sidecar.connected(10_000); // connected a second time, through a new connection
      expect(sidecar.logs()).toMatch(/no answer to the tunnel's heartbeat for \d+ ms; redialing/);
      const health = (await (await rt.api("/machines/flaky/v1/health")).json()) as { machine: { connected: boolean } };
      expect(health.machine.connected).toBe(true);
      expect((await rt.api("/machines/flaky/v1/processes")).status).toBe(200);
    } finally {
      await sidecar.stop();
      relay.close();
    }
  });
});

describe("a machine nobody connected", () => {
  it("answers 404 to a client and creates no object; only a sidecar's connection creates one", async () => {
    const ns = await rt.worker.mf.getDurableObjectNamespace("MACHINE");
    const objectFile = (machine: string) => join(rt.dir, "state", "do", "-MachineObject", `${ns.idFromName(machine).toString()}.sqlite`);
    expect(existsSync(objectFile("local"))).toBe(true); // the layout this test relies on
    for (const path of ["/machines/typo/v1/processes", "/machines/typo/v1/health", "/machines/typo/v1/acp"]) {
      const res = await rt.api(path);
      expect(res.status, path).toBe(404);
      expect(errorCode(await problemOf(res))).toBe("not_found");
    }
    const post = await rt.api("/machines/typo/v1/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "true" }),
    });
    expect(post.status).toBe(404);
    // Minting a first token for a new machine creates nothing either; revoking an unknown machine is 404.
    expect(
      (await rt.api("/v1/machine-tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ machine: "typo" }) }))
        .status,
    ).toBe(201);
    expect((await rt.api("/v1/machine-tokens/typo", { method: "DELETE" })).status).toBe(404);
    expect(existsSync(objectFile("typo"))).toBe(false);
    expect((await readdir(join(rt.dir, "state", "do", "-MachineObject"))).some((f) => f.startsWith(ns.idFromName("typo").toString()))).toBe(false);
  });

  it("answers 503 (not 404) once it has connected and gone", async () => {
    const gone = await rt.addSidecar("was-here");
    await gone.stop();
    rt.sidecars.delete("was-here");
    const res = await rt.api("/machines/was-here/v1/processes");
    expect(res.status).toBe(503);
    expect(errorCode(await problemOf(res))).toBe("machine_offline");
  });
});

describe("the machines list", () => {
  it("pages by id", async () => {
    const first = (await (await rt.api("/v1/machines?limit=1")).json()) as { machines: { id: string }[]; nextAfter: string | null };
    expect(first.machines).toHaveLength(1);
    expect(first.nextAfter).toBe(first.machines[0]!.id);
    const second = (await (await rt.api(`/v1/machines?limit=1&after=${first.nextAfter}`)).json()) as { machines: { id: string }[] };
    expect(second.machines[0]!.id > first.machines[0]!.id).toBe(true);
    const all = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string }[]; nextAfter: string | null };
    expect(all.nextAfter).toBeNull();
    expect(all.machines.map((m) => m.id)).toEqual([...all.machines.map((m) => m.id)].sort());
  });
});

describe("an SSE reader on a quiet stream", () => {
  it("is ended after SSE_IDLE_CLOSE_MS without events, with a retry hint and where to resume", async () => {
    const quiet = await startRuntime({ machines: ["local"], vars: { SSE_IDLE_CLOSE_MS: "700" } });
    try {
      const init = await quiet.api("/v1/acp/quiet?agent=mock", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
      });
      expect(init.status).toBe(200);
      const session = await quiet.api("/v1/acp/quiet", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: quiet.dir, mcpServers: [] } }),
      });
      expect(session.status).toBe(200);
      const started = Date.now();
      const stream = await quiet.api("/v1/acp/quiet", { headers: { accept: "text/event-stream" } });
      const text = await stream.text(); // ends by itself: the stream goes quiet
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(text).toMatch(/: idle for 700 ms; reconnect with Last-Event-ID: \d+ for more\nretry: 10000\n\n$/);
      // The server is still there: a reader that comes back resumes.
      expect((await quiet.api("/v1/acp")).status).toBe(200);
      const list = (await (await quiet.api("/v1/acp")).json()) as { servers: { serverId: string }[] };
      expect(list.servers.map((s) => s.serverId)).toContain("quiet");
    } finally {
      await quiet.dispose();
    }
  });
});
