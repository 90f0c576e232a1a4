import { afterEach, describe, expect, it, vi } from "vitest";
import { parseWorkerFrame, UPLOAD_WINDOW_MAX, type WorkerFrame } from "@agent-runtime/protocol/frames";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { setAttachment, Tunnel, type TunnelHost } from "./tunnel";

/** A hibernatable socket as the tunnel sees it: sends, closes, its attachment. */
class FakeSocket {
  readyState = 1;
  readonly sent: (string | Uint8Array)[] = [];
  closedWith: number | null = null;
  private attachment: unknown = null;

  send(message: string | Uint8Array): void {
    if (this.readyState !== 1) throw new Error("closed");
    this.sent.push(message);
  }
  close(code: number): void {
    this.readyState = 3;
    this.closedWith = code;
  }
  serializeAttachment(value: unknown): void {
    this.attachment = structuredClone(value);
  }
  deserializeAttachment(): unknown {
    return this.attachment;
  }
  /** The frames sent, as the sidecar would parse them. */
  frames(): WorkerFrame[] {
    return this.sent.map((m) => {
      const parsed = parseWorkerFrame(m);
      if (!parsed.ok) throw new Error(parsed.error);
      return parsed.frame;
    });
  }
}

function sidecarSocket(heartbeatMs = 20_000): FakeSocket {
  const ws = new FakeSocket();
  setAttachment(ws as unknown as WebSocket, { machine: "m", connectedAtMs: Date.now(), hello: true, generation: 1, heartbeatMs });
  return ws;
}

function harness() {
  const sockets: FakeSocket[] = [];
  const awayWith: ProblemInit[] = [];
  const halfOpen: FakeSocket[] = [];
  let lastPing: number | null = null;
  const host: TunnelHost = {
    sockets: () => sockets as unknown as WebSocket[],
    lastPingMs: () => lastPing,
    halfOpen: (ws) => {
      halfOpen.push(ws as unknown as FakeSocket);
      (ws as unknown as FakeSocket).close(1001);
    },
    away: (problem) => awayWith.push(problem),
    graceMs: 15_000,
  };
  const tunnel = new Tunnel(host);
  const connect = (bootId: string) => {
    const ws = sidecarSocket();
    sockets.splice(0, sockets.length, ws);
    return { ws, greeted: tunnel.greeted(ws as unknown as WebSocket, bootId) };
  };
  const drop = (code = 1006) => {
    for (const ws of sockets) ws.close(code);
    return tunnel.closed(code);
  };
  return { tunnel, sockets, awayWith, halfOpen, connect, drop, setLastPing: (ms: number) => (lastPing = ms) };
}

const lastReq = (ws: FakeSocket) =>
  ws
    .frames()
    .filter((f): f is Extract<WorkerFrame, { t: "req" }> => f.t === "req")
    .at(-1)!;

afterEach(() => {
  vi.useRealTimers();
});

describe("the worker's end of the tunnel", () => {
  it("sends a call and settles it with the answer, parsed against the operation's result", async () => {
    const { tunnel, connect } = harness();
    const { ws } = connect("boot-a");
    const listing = tunnel.call("acp.list", {});
    const req = lastReq(ws);
    expect(req).toMatchObject({ op: "acp.list", args: {} });
    tunnel.answered({ t: "res", id: req.id, ok: true, value: { servers: [] } });
    expect(await listing).toEqual({ ok: true, value: { servers: [] } });

    const stat = tunnel.call("fs.stat", { path: "/tmp" });
    tunnel.answered({ t: "res", id: lastReq(ws).id, ok: true, value: { nonsense: true } });
    expect(await stat).toMatchObject({ ok: false, problem: { code: "stream_error", detail: expect.stringContaining("update the sidecar") } });

    const refused = tunnel.call("fs.stat", { path: "/nope" });
    tunnel.answered({ t: "err", id: lastReq(ws).id, problem: { code: "not_found", detail: "no /nope" } });
    expect(await refused).toEqual({ ok: false, problem: { code: "not_found", detail: "no /nope" } });
    // An answer nobody waits for (answered already) changes nothing.
    tunnel.answered({ t: "res", id: req.id, ok: true, value: { servers: [] } });
  });

  it("is offline at once with no sidecar and none expected back", async () => {
    const { tunnel } = harness();
    expect(tunnel.reachable()).toBe(false);
    expect(await tunnel.call("acp.list", {})).toMatchObject({ ok: false, problem: { code: "machine_offline" } });
  });

  it("sends a call carrying bytes as one binary frame", () => {
    const { tunnel, connect } = harness();
    const { ws } = connect("boot-a");
    void tunnel.call("fs.upload", { upload: "abcdefgh-1", offset: 0, bytes: new Uint8Array([1, 2, 3]) });
    expect(ws.sent.at(-1)).toBeInstanceOf(Uint8Array);
    expect(lastReq(ws).args).toEqual({ upload: "abcdefgh-1", offset: 0, bytes: new Uint8Array([1, 2, 3]) });
  });

  it("re-sends what was in flight, the same frame with the same id, when the same sidecar comes back", async () => {
    const { tunnel, connect, drop } = harness();
    const first = connect("boot-a").ws;
    const inFlight = tunnel.call("processes.list", {});
    const sent = first.sent.at(-1);
    expect(drop()).toBe(true);
    expect(tunnel.reachable()).toBe(true); // within the grace
    const meanwhile = tunnel.call("acp.list", {});
    const { ws: again, greeted } = connect("boot-a");
    expect(greeted.restarted).toBe(false);
    expect(again.sent[0]).toBe(sent);
    expect(again.frames().map((f) => (f.t === "req" ? f.op : f.t))).toEqual(["processes.list", "acp.list"]);
    const [a, b] = again.frames() as Extract<WorkerFrame, { t: "req" }>[];
    tunnel.answered({ t: "res", id: a!.id, ok: true, value: { processes: [] } });
    tunnel.answered({ t: "res", id: b!.id, ok: true, value: { servers: [] } });
    expect(await inFlight).toEqual({ ok: true, value: { processes: [] } });
    expect(await meanwhile).toEqual({ ok: true, value: { servers: [] } });
  });

  it("never sends a restarted sidecar a call meant for the one that is gone; calls made meanwhile go to it", async () => {
    const { tunnel, connect, drop } = harness();
    connect("boot-a");
    const inFlight = tunnel.call("processes.spawn", { command: "sleep", args: ["1"] });
    drop();
    const meanwhile = tunnel.call("acp.list", {});
    const { ws, greeted } = connect("boot-b");
    expect(greeted.restarted).toBe(true);
    expect(await inFlight).toMatchObject({ ok: false, problem: { code: "machine_restarted" } });
    expect(ws.frames().map((f) => (f.t === "req" ? f.op : f.t))).toEqual(["acp.list"]);
    tunnel.answered({ t: "res", id: lastReq(ws).id, ok: true, value: { servers: [] } });
    expect(await meanwhile).toMatchObject({ ok: true });
  });

  it("fails what waits once the grace passes without the sidecar, and tells the host", async () => {
    vi.useFakeTimers();
    const { tunnel, connect, drop, awayWith } = harness();
    connect("boot-a");
    const inFlight = tunnel.call("acp.list", {});
    drop();
    vi.advanceTimersByTime(14_999);
    expect(awayWith).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(await inFlight).toMatchObject({ ok: false, problem: { code: "machine_offline" } });
    expect(awayWith).toMatchObject([{ code: "machine_offline" }]);
    expect(tunnel.reachable()).toBe(false);
  });

  it("fails at once when the sidecar said goodbye (1000)", async () => {
    const { tunnel, connect, drop, awayWith } = harness();
    connect("boot-a");
    const inFlight = tunnel.call("acp.list", {});
    drop(1000);
    expect(await inFlight).toMatchObject({ ok: false, problem: { code: "machine_offline" } });
    expect(awayWith).toHaveLength(1);
  });

  it("gives up on a call at its deadline (the operation's, unless given) and tells the sidecar to stop it", async () => {
    vi.useFakeTimers();
    const { tunnel, connect } = harness();
    const { ws } = connect("boot-a");
    const slow = tunnel.call("processes.input", { id: "p", data: "x", encoding: "utf8", eof: false });
    const id = lastReq(ws).id;
    vi.advanceTimersByTime(30_000); // processes.input waits half a minute
    expect(await slow).toMatchObject({ ok: false, problem: { code: "timeout", detail: expect.stringContaining("30000 ms (processes.input)") } });
    expect(ws.frames().at(-1)).toEqual({ t: "cancel", id });
    const custom = tunnel.call("acp.list", {}, 5);
    vi.advanceTimersByTime(5);
    expect(await custom).toMatchObject({ ok: false, problem: { code: "timeout" } });
  });

  it("treats a socket whose sidecar stopped pinging as gone (half-open)", () => {
    vi.useFakeTimers();
    const { tunnel, connect, halfOpen, setLastPing } = harness();
    const { ws } = connect("boot-a");
    vi.advanceTimersByTime(50_000);
    setLastPing(Date.now());
    vi.advanceTimersByTime(60_000); // three 20 s heartbeats since the last ping
    expect(tunnel.live()).toBe(ws);
    vi.advanceTimersByTime(1);
    expect(tunnel.live()).toBeNull();
    expect(halfOpen).toEqual([ws]);
  });

  it("closes a socket whose attachment it cannot read (from another deployment)", () => {
    const { tunnel, sockets } = harness();
    const stranger = new FakeSocket();
    stranger.serializeAttachment({ machine: 1 });
    sockets.push(stranger);
    expect(tunnel.live()).toBeNull();
    expect(stranger.closedWith).toBe(4003);
  });

  it("sends one upload piece at a time unless the sidecar's hello offered more, and never more than UPLOAD_WINDOW_MAX", () => {
    const { tunnel, connect } = harness();
    expect(tunnel.uploadWindow()).toBe(1); // no sidecar
    const { ws } = connect("boot-1");
    expect(tunnel.uploadWindow()).toBe(1);
    const attachment = { machine: "m", connectedAtMs: Date.now(), hello: true, generation: 1, heartbeatMs: 20_000 };
    setAttachment(ws as unknown as WebSocket, { ...attachment, uploadWindow: 2 });
    expect(tunnel.uploadWindow()).toBe(2);
    setAttachment(ws as unknown as WebSocket, { ...attachment, uploadWindow: 64 });
    expect(tunnel.uploadWindow()).toBe(UPLOAD_WINDOW_MAX);
  });
});
