/**
 * The object's sockets by kind (client-sockets.ts): a socket's kind comes from its tags, read once per
 * socket (they never change once it is accepted), and a socket of no registered kind is the tunnel's.
 */
import { describe, expect, it } from "vitest";
import type { StreamHolders } from "../streams/stream-holders";
import { ClientSockets } from "./client-sockets";
import type { MachineFeature, SocketKind } from "./feature";

/** A socket as ClientSockets sees it: an identity, never used otherwise. */
const socket = () => ({}) as WebSocket;

function setUp(expired = false) {
  const seen: string[] = [];
  const kind: SocketKind = {
    tag: "viewer",
    message: (_ws, message) => void seen.push(`message ${String(message)}`),
    closed: (_ws, code) => void seen.push(`closed ${code}`),
    end: (_ws, problem) => void seen.push(`end ${problem.code}`),
  };
  const features = [{ name: "viewers", sockets: kind } as unknown as MachineFeature];
  const tags = new Map<WebSocket, string[]>();
  const reads = new Map<WebSocket, number>();
  const tagsOf = (ws: WebSocket) => {
    reads.set(ws, (reads.get(ws) ?? 0) + 1);
    return tags.get(ws) ?? [];
  };
  const holders = { socketExpired: () => expired } as unknown as StreamHolders;
  return { clients: new ClientSockets(features, holders, tagsOf), tags, reads, seen };
}

describe("the object's client sockets", () => {
  it("hands a kind's socket its messages, its close and its end, with its tags read once", async () => {
    const { clients, tags, reads, seen } = setUp();
    const viewer = socket();
    tags.set(viewer, ["viewer", "holder:x"]);
    expect(clients.owns(viewer)).toBe(true);
    expect(await clients.message(viewer, "a")).toBe(true);
    expect(await clients.message(viewer, "b")).toBe(true);
    clients.end(viewer, { code: "token_invalid", detail: "revoked" });
    expect(await clients.closed(viewer, 1000, "")).toBe(true);
    expect(seen).toEqual(["message a", "message b", "end token_invalid", "closed 1000"]);
    expect(reads.get(viewer)).toBe(1);
  });

  it("leaves the tunnel's socket (no registered kind's tag) to the tunnel, its tags read once too", async () => {
    const { clients, tags, reads, seen } = setUp();
    const sidecar = socket();
    tags.set(sidecar, ["sidecar"]);
    for (let i = 0; i < 3; i++) expect(clients.owns(sidecar)).toBe(false);
    expect(await clients.message(sidecar, "res")).toBe(false);
    expect(await clients.closed(sidecar, 1006, "")).toBe(false);
    expect(seen).toEqual([]);
    expect(reads.get(sidecar)).toBe(1);
  });

  it("tells each socket's kind apart", () => {
    const { clients, tags } = setUp();
    const [viewer, sidecar] = [socket(), socket()];
    tags.set(viewer, ["viewer"]);
    tags.set(sidecar, ["sidecar"]);
    expect([clients.owns(viewer), clients.owns(sidecar), clients.owns(viewer)]).toEqual([true, false, true]);
  });

  it("drops a message of a socket whose holder's token expired", async () => {
    const { clients, tags, seen } = setUp(true);
    const viewer = socket();
    tags.set(viewer, ["viewer"]);
    expect(await clients.message(viewer, "late")).toBe(true);
    expect(seen).toEqual([]);
  });
});
