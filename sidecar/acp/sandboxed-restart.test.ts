import { afterEach, describe, expect, it, vi } from "vitest";
import type { ServerSetup } from "./acp-server";
import { remember } from "./sandboxed-restart";

const setup = (): { setup: ServerSetup } => ({ setup: { initialize: null, authMethodId: null, sessions: new Map() } });
const rpc = (method: string, params: unknown, id: number | null = 1) => JSON.stringify({ jsonrpc: "2.0", ...(id === null ? {} : { id }), method, params });

describe("remember: what an agent started again in a wider sandbox is told again", () => {
  afterEach(() => vi.restoreAllMocks());

  it("keeps the initialize, the login and the sessions with their folders; a closed session is forgotten", () => {
    const server = setup();
    remember(server, "initialize", rpc("initialize", { protocolVersion: 1 }), undefined);
    remember(server, "authenticate", rpc("authenticate", { methodId: "key" }), undefined);
    remember(server, "session/new", rpc("session/new", { cwd: "/w", mcpServers: [] }), JSON.stringify({ jsonrpc: "2.0", id: 1, result: { sessionId: "s1" } }));
    remember(server, "session/load", rpc("session/load", { sessionId: "s2", cwd: "/v", mcpServers: [] }), undefined);
    expect(server.setup.initialize).toEqual({ protocolVersion: 1 });
    expect(server.setup.authMethodId).toBe("key");
    expect([...server.setup.sessions]).toEqual([
      ["s1", { cwd: "/w", mcpServers: [] }],
      ["s2", { cwd: "/v", mcpServers: [] }],
    ]);
    remember(server, "session/close", rpc("session/close", { sessionId: "s1" }), undefined);
    expect([...server.setup.sessions.keys()]).toEqual(["s2"]);
  });

  it("lets every other message be, without parsing it (a turn's prompt, a notification, an answer)", () => {
    const server = setup();
    const parse = vi.spyOn(JSON, "parse");
    remember(server, "session/prompt", rpc("session/prompt", { sessionId: "s1", prompt: [{ type: "text", text: "hi" }] }), "{}");
    remember(server, "session/cancel", rpc("session/cancel", { sessionId: "s1" }, null), undefined);
    remember(server, null, JSON.stringify({ jsonrpc: "2.0", id: 3, result: {} }), undefined);
    expect(parse).not.toHaveBeenCalled();
    expect(server.setup).toEqual({ initialize: null, authMethodId: null, sessions: new Map() });
  });
});
