/**
 * The worker's settings come from one schema (settings.ts): its parse turns the variables wrangler hands
 * over into the typed settings, a value that does not parse falls back to its default, and `Env`'s
 * variables are that schema's input (no second list to keep in step).
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { Env } from "./env";
import { settings, type WorkerVars } from "./settings";

describe("settings", () => {
  it("are the variables parsed: lists split, numbers read, a value that does not parse is its default", () => {
    const s = settings({
      API_TOKEN: "at_one, at_two,,bad token",
      TUNNEL_SECRET: "ts",
      ACP_TIMEOUT_MS: "2500",
      RECONNECT_GRACE_MS: "soon",
      DEFAULT_AGENT: "",
      DEFAULT_MACHINE: "  laptop ",
      PREVIEW_DOMAIN: "*.Preview.Example.com",
      WEBHOOK_ALLOW_PRIVATE: "1",
      CF_ACCESS_AUD: "aud",
      CF_ACCESS_TEAM_DOMAIN: "team.cloudflareaccess.com/",
    });
    expect(s).toMatchObject({
      apiTokens: ["at_one", "at_two"],
      tunnelSecret: "ts",
      acpTimeoutMs: 2500,
      defaultAgent: null,
      defaultMachine: "laptop",
      previewDomain: "preview.example.com",
      notifyAllowPrivate: true,
      access: { audience: "aud", issuer: "https://team.cloudflareaccess.com", certsUrl: "https://team.cloudflareaccess.com/cdn-cgi/access/certs", roles: null },
      vapid: null,
    });
    expect(s.reconnectGraceMs).toBe(settings({}).reconnectGraceMs);
    expect(settings({}).apiTokens).toEqual([]);
  });

  it("are parsed once per binding object", () => {
    const vars: WorkerVars = { API_TOKEN: "at_x" };
    expect(settings(vars)).toBe(settings(vars));
  });

  it("refuse a default agent that is not an agent id", () => {
    expect(() => settings({ DEFAULT_AGENT: "Not An Agent!" })).toThrow();
  });

  it("make Env's variables: the schema's input, every one a string or absent", () => {
    expectTypeOf<Env["ACP_TIMEOUT_MS"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Env["PREVIEW_DOMAIN"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Env["API_TOKEN"]>().toEqualTypeOf<string>();
    expectTypeOf<Pick<Env, keyof WorkerVars>>().toMatchTypeOf<WorkerVars>();
  });
});
