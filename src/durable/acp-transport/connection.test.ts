import { describe, expect, it } from "vitest";
import { AcpConnection } from "./connection";

const request = (id: number | string, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: "2.0" as const, id, method, params });

describe("an ACP connection's routing", () => {
  it("checks Acp-Session-Id as the SDK's server does", () => {
    const c = new AcpConnection("acpc-1", "owner");
    expect(c.accept(request(1, "session/prompt", { sessionId: "s1" }), null)).toEqual({ ok: false, status: 400, detail: "Missing Acp-Session-Id" });
    expect(c.accept(request(1, "session/prompt", { sessionId: "s1" }), "s2")).toEqual({ ok: false, status: 400, detail: "Mismatched Acp-Session-Id" });
    // A session-scoped method needs the header even if its params lack the id; an unknown method with one needs it too.
    expect(c.accept(request(2, "session/cancel"), null).ok).toBe(false);
    expect(c.accept(request(3, "_vendor/thing", { sessionId: "s1" }), null).ok).toBe(false);
    expect(c.accept(request(4, "session/new", { cwd: "/" }), null)).toEqual({ ok: true, route: null });
    expect(c.accept(request(5, "_vendor/thing", { any: 1 }), null)).toEqual({ ok: true, route: null });
  });

  it("sends each answer where its request came from; session/load's to the connection", () => {
    const c = new AcpConnection("acpc-1", "owner");
    c.accept(request(1, "session/new", { cwd: "/" }), null);
    expect(c.answered(1, true, { sessionId: "s1" })).toBeNull();
    c.accept(request(2, "session/prompt", { sessionId: "s1" }), "s1");
    c.accept(request("2", "session/load", { sessionId: "s2" }), "s2");
    expect(c.answered("2", true, {})).toBeNull(); // ids 2 and "2" are two requests
    expect(c.answered(2, true, { stopReason: "end_turn" })).toBe("s1");
    expect(c.answered(99, true, {})).toBeNull(); // nothing waits: the connection's stream
  });

  it("routes the agent's messages by their sessionId, once each, and checks the client's responses", () => {
    const c = new AcpConnection("acpc-1", "owner");
    expect(c.route(1, { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s1" } })).toBe("s1");
    expect(c.route(2, { jsonrpc: "2.0", id: 0, method: "session/request_permission", params: { sessionId: "s1" } })).toBe("s1");
    expect(c.route(3, { jsonrpc: "2.0", method: "_vendor/hello", params: {} })).toBeNull();
    expect(c.route(2, { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s1" } })).toBeUndefined(); // replayed
    expect(c.accept({ jsonrpc: "2.0", id: 0, result: {} }, null)).toEqual({ ok: false, status: 400, detail: "Missing Acp-Session-Id" });
    expect(c.accept({ jsonrpc: "2.0", id: 0, result: {} }, "s1")).toEqual({ ok: true, route: "s1" });
  });

  it("after its agent is lost, refuses a session's messages (409) until session/load or session/resume reattaches it", () => {
    const c = new AcpConnection("acpc-1", "owner");
    c.accept(request(1, "session/prompt", { sessionId: "s1" }), "s1");
    c.accept(request(2, "session/prompt", { sessionId: "s2" }), "s2");
    c.lost();
    const refused = c.accept(request(3, "session/prompt", { sessionId: "s1" }), "s1");
    expect(refused.ok === false && refused.status).toBe(409);
    expect(c.accept(request(4, "session/new", { cwd: "/" }), null).ok).toBe(true); // the connection itself goes on
    expect(c.accept(request(5, "session/resume", { sessionId: "s1", cwd: "/" }), "s1").ok).toBe(true);
    c.answered(5, true, {});
    expect(c.accept(request(6, "session/prompt", { sessionId: "s1" }), "s1").ok).toBe(true);
    expect(c.isDetached("s2")).toBe(true);
    c.accept(request(7, "session/load", { sessionId: "s2", cwd: "/" }), "s2");
    c.answered(7, false, undefined); // a failed load leaves it detached
    expect(c.isDetached("s2")).toBe(true);
  });
});
