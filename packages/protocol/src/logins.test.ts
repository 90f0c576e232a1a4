import { describe, expect, it } from "vitest";
import { authMethodsOf, isAuthRequired } from "./logins";

describe("authMethodsOf", () => {
  it("reads terminal, env_var and agent methods (a method without a type is the agent's), and logout", () => {
    const found = authMethodsOf({
      authMethods: [
        { type: "terminal", id: "t", name: "Terminal", args: ["login"], env: { A: "1" } },
        { type: "env_var", id: "k", name: "Key", vars: [{ name: "KEY" }, { name: "ORG", optional: true }] },
        { id: "oauth", name: "Browser", description: "opens a page" },
        { type: "future_kind", name: "no id" },
      ],
      agentCapabilities: { auth: { logout: {} } },
    });
    expect(found.methods).toEqual([
      { id: "t", type: "terminal", name: "Terminal" },
      { id: "k", type: "env_var", name: "Key", vars: ["KEY", "ORG"] },
      { id: "oauth", type: "agent", name: "Browser", description: "opens a page" },
    ]);
    expect(found.terminal.get("t")).toEqual({ args: ["login"], env: { A: "1" } });
    expect(found.logout).toBe(true);
  });

  it("reads nothing from an answer without methods, or one it cannot parse", () => {
    expect(authMethodsOf({ authMethods: [] })).toMatchObject({ methods: [], logout: false });
    expect(authMethodsOf("nonsense").methods).toEqual([]);
  });
});

describe("isAuthRequired", () => {
  it("is ACP's auth_required (-32000) and nothing else", () => {
    expect(isAuthRequired(JSON.stringify({ jsonrpc: "2.0", id: 2, error: { code: -32000, message: "Authentication required" } }))).toBe(true);
    expect(isAuthRequired(JSON.stringify({ jsonrpc: "2.0", id: 2, error: { code: -32603, message: "Internal error" } }))).toBe(false);
    expect(isAuthRequired(JSON.stringify({ jsonrpc: "2.0", id: 2, result: {} }))).toBe(false);
    expect(isAuthRequired("not json")).toBe(false);
  });
});
