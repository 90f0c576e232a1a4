import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { SidecarFrame } from "@agent-runtime/protocol/frames";
import type { OpHandlers } from "./tunnel";
import { TunnelClient } from "./tunnel";

/** Wakes whoever waits for a condition, after anything it may depend on happened (a frame, a state). */
const waiters: (() => void)[] = [];
const changed = () => {
  for (const wake of waiters.splice(0)) wake();
};
/** Resolves once `check` holds, looked at now and after every change. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise<void>((resolve) => waiters.push(resolve));
}

/**
 * A worker's end of the tunnel: it welcomes each hello (but those of the connections `unwelcomed` names, by
 * index) and keeps every frame each connection sent, by connection.
 */
async function fakeWorker(unwelcomed: readonly number[] = []) {
  const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await once(server, "listening");
  const connections: { socket: WebSocket; frames: SidecarFrame[] }[] = [];
  server.on("connection", (socket) => {
    const connection = { socket, frames: [] as SidecarFrame[] };
    const index = connections.push(connection) - 1;
    socket.on("message", (data) => {
      const text = data.toString();
      if (text === '{"t":"ping"}') return;
      const frame = SidecarFrame.parse(JSON.parse(text));
      connection.frames.push(frame);
      if (frame.t === "hello" && !unwelcomed.includes(index)) socket.send(JSON.stringify({ t: "welcome", machine: frame.machine }));
      changed();
    });
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, connections };
}

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

/** A sidecar's tunnel to `worker`, started, redialing at once; its states as it went through them. */
function startTunnel(worker: Awaited<ReturnType<typeof fakeWorker>>) {
  const states: string[] = [];
  const tunnel = new TunnelClient({
    url: worker.url,
    machine: "laptop",
    token: "t",
    sidecarVersion: "0.0.0",
    // No call is made in these tests: the handlers are never reached.
    handlers: {} as OpHandlers,
    streams: () => null,
    reconnectSpreadMs: 0,
    onState: (change) => {
      states.push(change.state);
      changed();
    },
  });
  close = async () => {
    await tunnel.stop();
    worker.server.close();
  };
  tunnel.start();
  return { tunnel, states };
}

describe("the sidecar's notices to the worker", () => {
  it("tells a login that changed while the tunnel was down after the next welcome, once per agent", async () => {
    const worker = await fakeWorker();
    const { tunnel, states } = startTunnel(worker);
    await until(() => states.includes("connected"));
    tunnel.tell({ t: "login", agent: "mock" });
    await until(() => worker.connections[0]!.frames.some((f) => f.t === "login"));

    // The worker goes; while the tunnel is down the agent's login changes twice, another's once.
    worker.connections[0]!.socket.terminate();
    await until(() => states.includes("reconnecting"));
    tunnel.tell({ t: "login", agent: "mock" });
    tunnel.tell({ t: "login", agent: "mock" });
    tunnel.tell({ t: "login", agent: "claude" });

    await until(() => worker.connections.length === 2 && worker.connections[1]!.frames.filter((f) => f.t === "login").length === 2);
    const second = worker.connections[1]!.frames.map((f) => (f.t === "login" ? `login ${f.agent}` : f.t));
    expect(second).toEqual(["hello", "login mock", "login claude"]);
  });

  it("keeps a notice made after the hello but before the welcome for the connection that is welcomed", async () => {
    // The first connection's hello is never welcomed (the worker is still registering it), then it drops.
    const worker = await fakeWorker([0]);
    const { tunnel, states } = startTunnel(worker);
    await until(() => worker.connections[0]?.frames.some((f) => f.t === "hello") ?? false);
    tunnel.tell({ t: "login", agent: "mock" });
    worker.connections[0]!.socket.terminate();
    await until(() => worker.connections.length === 2 && worker.connections[1]!.frames.some((f) => f.t === "login"));
    expect(worker.connections[0]!.frames.map((f) => f.t)).toEqual(["hello"]);
    expect(worker.connections[1]!.frames.map((f) => (f.t === "login" ? `login ${f.agent}` : f.t))).toEqual(["hello", "login mock"]);
    expect(states).toContain("connected");
  });
});
