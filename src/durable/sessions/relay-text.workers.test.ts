/**
 * The relay's message as text (docs/architecture.md, "The relay's message as text"): the route
 * hands `POST /v1/acp/{id}`'s body to the machine's object as text, and the object reads it, once, against
 * `JsonRpcMessage`: what is no JSON-RPC message is the 400 a declared body gets and never reaches the
 * sidecar, whoever calls the object; what is one reaches the agent as one line of the JSON the object read.
 */
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { FakeSidecar } from "../../../test/workers/fake-sidecar";
import { sidecarsPerTest } from "../../../test/workers/requests";

const api = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
  SELF.fetch(`https://runtime.test${path}`, {
    ...init,
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json", accept: "application/json", ...(init.headers ?? {}) },
  });

const connect = sidecarsPerTest();

const acpPosts = (sidecar: FakeSidecar) => sidecar.received.filter((f) => f.t === "req" && f.op === "acp.post").length;

describe("the relay's message, handed to the machine's object as text", () => {
  it("is refused by the object with the 400 of a declared body, and never sent on", async () => {
    const machine = "relay-text-refused";
    const sidecar = await connect(machine);
    const path = `/machines/${machine}/v1/acp/s1?agent=mock`;

    const notJsonRpc = await api(path, { method: "POST", body: JSON.stringify({ jsonrpc: "1.0", id: 1, method: "initialize" }) });
    expect(notJsonRpc.status).toBe(400);
    const problem = (await notJsonRpc.json()) as { type: string; detail: string; errors: { field: string }[] };
    expect(problem.type).toBe("urn:agent-runtime:error:invalid_request");
    expect(problem.detail).toMatch(/^json: jsonrpc: /);
    expect(problem.errors.map((e) => e.field)).toEqual(["jsonrpc"]);

    const malformed = await api(path, { method: "POST", body: "{oops" });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { detail: string }).detail).toBe("Malformed JSON in request body");

    // No media type and no body: read as `{}`, as a declared body is, so the refusal names what is missing.
    const empty = await SELF.fetch(`https://runtime.test${path}`, { method: "POST", headers: { authorization: `Bearer ${env.API_TOKEN}` } });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { detail: string }).detail).toContain("jsonrpc");

    const text = await api(path, { method: "POST", body: "{}", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);

    // Another caller of the object's RPC gets the same check: the text is read where it is used.
    const stub = env.MACHINE.get(env.MACHINE.idFromName(machine));
    const caller = { tokenId: null, name: "api", role: "admin" as const, expiresAtMs: null };
    const both = await stub.acpPost({ serverId: "s1", text: '{"jsonrpc":"2.0","id":1,"method":"x","result":1}', who: "api" }, 1_000, caller);
    expect(both).toMatchObject({ ok: false, problem: { code: "invalid_request", detail: expect.stringMatching(/^json: method: /) } });

    expect(acpPosts(sidecar)).toBe(0);
  });

  it("reaches the agent as one line of the JSON the object read, not as the client's text", async () => {
    const machine = "relay-text-line";
    const sidecar = await connect(machine);
    // Pretty-printed, with a key twice: the policy and the recorder read the last one, and so must the agent.
    const body = '{\n  "jsonrpc": "2.0",\n  "id": 7,\n  "method": "session/list",\n  "method": "initialize",\n  "params": { "protocolVersion": 1 }\n}';
    const posting = api(`/machines/${machine}/v1/acp/s1?agent=mock`, { method: "POST", body });
    const call = await sidecar.call("acp.post");
    expect(call.args.method).toBe("initialize");
    expect(call.args.awaitId).toBe(7);
    expect(call.args.message).not.toMatch(/[\r\n]/);
    expect(call.args.message.match(/"method"/g)).toHaveLength(1);
    expect(JSON.parse(call.args.message)).toEqual({ jsonrpc: "2.0", id: 7, method: "initialize", params: { protocolVersion: 1 } });
    const answer = JSON.stringify({ jsonrpc: "2.0", id: 7, result: { protocolVersion: 1, agentCapabilities: {} } });
    sidecar.answer(call, { status: 200, body: answer });
    const res = await posting;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe(answer);
  });
});
