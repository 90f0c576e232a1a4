/**
 * Tokens checked once per isolate on the relay's hot path (http/token-cache.ts), and a revocation that
 * still ends access at the next message: the machine's object answers for it (durable/tokens/revocation-watch.ts).
 */
import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { TokenObject } from "../durable/tokens/token";
import type { FakeSidecar } from "../../test/workers/fake-sidecar";
import { as, sidecarsPerTest } from "../../test/workers/requests";

const connect = sidecarsPerTest();

async function issue(name: string): Promise<{ id: string; token: string }> {
  const res = await as(env.API_TOKEN, "/v1/tokens", { method: "POST", body: JSON.stringify({ name, role: "member" }) });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as { id: string; token: string };
}

/** One message to server `s1` of `sidecar`'s machine as `token`, answered by the fake sidecar; the response. */
async function relayed(sidecar: FakeSidecar, token: string, id: number, query = ""): Promise<Response> {
  const posting = as(token, `/machines/${sidecar.machine}/v1/acp/s1${query}`, {
    method: "POST",
    headers: { accept: "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
  });
  const call = await sidecar.call("acp.post");
  expect(JSON.parse(call.args.message)).toMatchObject({ id });
  sidecar.answer(call, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id, result: { protocolVersion: 1 } }) });
  return posting;
}

describe("an issued token on the relay's hot path", () => {
  it("is asked of its object once, not at every message of a conversation", async () => {
    const sidecar = await connect("cache-hit");
    const member = await issue("chatty");
    const checks = vi.spyOn(TokenObject.prototype, "check");
    for (let id = 1; id <= 4; id++) expect((await relayed(sidecar, member.token, id, id === 1 ? "?agent=mock" : "")).status).toBe(200);
    expect(checks).toHaveBeenCalledTimes(1);
    // Any other route asks the token's object every time, as before.
    expect((await as(member.token, "/v1/machines")).status).toBe(200);
    expect(checks).toHaveBeenCalledTimes(2);
  });

  it("is refused at the next message once revoked, and that message never reaches the machine", async () => {
    const sidecar = await connect("cache-revoke");
    const member = await issue("to-revoke-mid-conversation");
    expect((await relayed(sidecar, member.token, 1, "?agent=mock")).status).toBe(200);
    expect((await relayed(sidecar, member.token, 2)).status).toBe(200); // kept in this isolate now
    expect((await as(env.API_TOKEN, `/v1/tokens/${member.id}`, { method: "DELETE" })).status).toBe(200);

    const refused = await as(member.token, "/machines/cache-revoke/v1/acp/s1", {
      method: "POST",
      headers: { accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } }),
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { detail: string }).detail).toContain("'to-revoke-mid-conversation' is revoked");
    // The next call the machine sees is the admin's, not the revoked token's message.
    expect((await relayed(sidecar, env.API_TOKEN, 4)).status).toBe(200);
  });

  it("is refused on a machine it never used before the revocation, where nothing was kept for it", async () => {
    const used = await connect("cache-used");
    const other = await connect("cache-other");
    const member = await issue("revoked-elsewhere");
    expect((await relayed(used, member.token, 1, "?agent=mock")).status).toBe(200);
    expect((await as(env.API_TOKEN, `/v1/tokens/${member.id}`, { method: "DELETE" })).status).toBe(200);
    const refused = await as(member.token, `/machines/${other.machine}/v1/acp/s1?agent=mock`, {
      method: "POST",
      headers: { accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
    });
    expect(refused.status).toBe(401);
  });
});
