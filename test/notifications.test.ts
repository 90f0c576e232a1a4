/**
 * Notifications against the real runtime: a webhook receiver and a push service of our own on
 * 127.0.0.1. The webhook answers 500 once and gets the signed event on the retry; the permission is
 * answered through POST /v1/sessions/{id}/permission and `turn.finished` follows. The push service checks
 * the VAPID JWT against the deployment's public key and decrypts the payload with http_ece (an
 * implementation independent of ours); its 410 ends the subscription. Scope, mute, test and revocation.
 */
import { createECDH, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import ece from "http_ece";
import { importJWK, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { startRuntime, waitFor, type Runtime } from "./harness";

interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
  atMs: number;
}

/** An HTTP server on 127.0.0.1 that records what it gets and answers with the next status of `statuses` (then 201). */
async function receiver(statuses: number[] = []): Promise<{ url: string; got: Received[]; statuses: number[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks), atMs: Date.now() });
      res.statusCode = statuses.shift() ?? 201;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, got, statuses, close: () => new Promise((r) => server.close(() => r())) };
}

let rt: Runtime;
beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"], vars: { NOTIFY_BACKOFF_MS: "200" } });
});
afterAll(async () => {
  await rt?.dispose();
});

const post = (path: string, body: unknown, token = rt.token) =>
  rt.api(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });

let nextId = 1;
async function sessionOn(serverId: string): Promise<string> {
  await rpc(rt, serverId, { jsonrpc: "2.0", id: nextId++, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  const res = (await (await rpc(rt, serverId, { jsonrpc: "2.0", id: nextId++, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
    result: { sessionId: string };
  };
  return res.result.sessionId;
}

type Payload = {
  id: string;
  event: string;
  machine: string;
  agent: string | null;
  session: { id: string; sessionId: string; title: string | null } | null;
  permission?: { requestId: number | string; title: string; options: { optionId: string }[] };
  turn?: { stopReason: string | null; lastLine: string | null };
  url: string;
  text: string;
};

describe("webhooks", () => {
  it("sign each event, retry a 500, list both attempts; answering the permission from anywhere lets the turn finish", async () => {
    const hook = await receiver([500]);
    const secret = "whsec-0123456789abcdef";
    const created = await post("/v1/notifications/subscriptions", {
      kind: "webhook",
      url: `${hook.url}/hook`,
      secret,
      events: ["permission.requested", "turn.finished"],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const subscription = (await created.json()) as { id: string; target: string; muted: boolean };
    expect(subscription).toMatchObject({ target: `${hook.url}/hook`, muted: false });
    expect(JSON.stringify(subscription)).not.toContain(secret);

    const sessionId = await sessionOn("hooked");
    const turn = rpc(rt, "hooked", {
      jsonrpc: "2.0",
      id: nextId++,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "/permission" }] },
    });

    // The first attempt got a 500; the retry carries the same signed event.
    await waitFor(async () => hook.got.length >= 2, "the retried webhook", 15_000);
    const [first, second] = hook.got;
    expect(first!.body.toString()).toBe(second!.body.toString());
    const body = second!.body.toString();
    const payload = JSON.parse(body) as Payload;
    expect(payload).toMatchObject({ event: "permission.requested", machine: "local", agent: "mock", permission: { title: "Write hello.txt" } });
    expect(payload.url).toBe(`${rt.url}/sessions/${payload.session!.id}`);
    expect(payload.text).not.toContain("\n");
    expect(payload.text).toContain("Write hello.txt");
    // Verifying a delivery, as a receiver does it in a few lines:
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(second!.headers["x-agent-runtime-signature"]))!;
    expect(createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")).toBe(v1);
    expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(60);
    expect(second!.headers["x-agent-runtime-event"]).toBe("permission.requested");

    const attempts = (await (await rt.api(`/v1/notifications/deliveries?subscription=${subscription.id}`)).json()) as {
      deliveries: { attempt: number; outcome: string; httpStatus: number | null; event: string }[];
    };
    expect(attempts.deliveries.map((d) => [d.event, d.attempt, d.outcome, d.httpStatus])).toEqual([
      ["permission.requested", 2, "delivered", 201],
      ["permission.requested", 1, "retrying", 500],
    ]);

    // A chat bot answers from the payload alone.
    const answered = await post(`/v1/sessions/${payload.session!.id}/permission`, { requestId: payload.permission!.requestId, optionId: "allow" });
    expect(answered.status).toBe(200);
    expect(((await (await turn).json()) as { result: { stopReason: string } }).result.stopReason).toBe("end_turn");
    await waitFor(async () => hook.got.some((g) => JSON.parse(g.body.toString()).event === "turn.finished"), "turn.finished");
    const finished = JSON.parse(hook.got.find((g) => JSON.parse(g.body.toString()).event === "turn.finished")!.body.toString()) as Payload;
    expect(finished.turn).toMatchObject({ stopReason: "end_turn", lastLine: "Permission granted: wrote hello.txt" });

    // Muted: nothing more arrives; the test endpoint still reaches it, and is listed.
    expect(
      (
        await rt.api(`/v1/notifications/subscriptions/${subscription.id}`, {
          method: "PATCH",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ muted: true }),
        })
      ).status,
    ).toBe(200);
    const before = hook.got.length;
    await rpc(rt, "hooked", { jsonrpc: "2.0", id: nextId++, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "quiet" }] } });
    const tested = await post(`/v1/notifications/subscriptions/${subscription.id}/test`, {});
    expect(tested.status).toBe(202);
    await waitFor(async () => hook.got.length > before, "the test notification");
    expect(hook.got.slice(before).map((g) => JSON.parse(g.body.toString()).event)).toEqual(["test"]);
    expect((await rt.api(`/v1/notifications/subscriptions/${subscription.id}`, { method: "DELETE" })).status).toBe(204);
    await hook.close();
  });

  it("refuses other schemes, machines outside the token's scope, and ends with a revoked token", async () => {
    // This runtime is local (WEBHOOK_ALLOW_PRIVATE=1, as `npm start` sets it): http to 127.0.0.1 is how
    // these tests are notified. A deployment's refusals of http and of addresses inside are tested in
    // src/http/trust.workers.test.ts and target-address.test.ts.
    const refused = await post("/v1/notifications/subscriptions", { kind: "webhook", url: "ftp://10.1.2.3/hook", secret: "0123456789abcdef" });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/https/);

    const issued = (await (await post("/v1/tokens", { name: "phone-pia", role: "viewer", machines: ["local"] })).json()) as { id: string; token: string };
    const outside = await post(
      "/v1/notifications/subscriptions",
      { kind: "webhook", url: "https://example.com/h", secret: "0123456789abcdef", machines: ["other"] },
      issued.token,
    );
    expect(outside.status).toBe(403);
    const mine = await post("/v1/notifications/subscriptions", { kind: "webhook", url: "https://example.com/h", secret: "0123456789abcdef" }, issued.token);
    expect(mine.status).toBe(201);
    const list = async (token: string) =>
      ((await (await rt.api("/v1/notifications/subscriptions", { headers: { authorization: `Bearer ${token}` } })).json()) as { subscriptions: unknown[] })
        .subscriptions.length;
    expect(await list(issued.token)).toBe(1);
    expect((await rt.api(`/v1/tokens/${issued.id}`, { method: "DELETE" })).status).toBe(200);
    expect(
      ((await (await rt.api("/v1/notifications/subscriptions")).json()) as { subscriptions: { owner: string }[] }).subscriptions.filter(
        (s) => s.owner === issued.id,
      ),
    ).toEqual([]);
  });
});

describe("Web Push", () => {
  it("reaches a push service within 2 s: VAPID JWT verified with the deployment's key, payload decrypted apart from us; a 410 ends the subscription", async () => {
    const push = await receiver();
    const browser = createECDH("prime256v1");
    browser.generateKeys();
    const auth = randomBytes(16);
    const created = await post("/v1/notifications/subscriptions", {
      kind: "webpush",
      subscription: { endpoint: `${push.url}/push/device-1`, keys: { p256dh: browser.getPublicKey().toString("base64url"), auth: auth.toString("base64url") } },
      events: ["permission.requested"],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const subscription = (await created.json()) as { id: string; target: string };
    expect(subscription.target).toBe(push.url); // only the push service's origin is shown
    const { publicKey } = (await (await rt.api("/v1/notifications/vapid")).json()) as { publicKey: string };

    const sessionId = await sessionOn("pushed");
    const askedAt = Date.now();
    const turn = rpc(rt, "pushed", {
      jsonrpc: "2.0",
      id: nextId++,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "/permission" }] },
    });
    await waitFor(async () => push.got.length >= 1, "the push", 5_000);
    const got = push.got[0]!;
    expect(got.atMs - askedAt).toBeLessThan(2_000);
    expect(got.path).toBe("/push/device-1");
    expect(got.headers["content-encoding"]).toBe("aes128gcm");
    expect(got.headers.ttl).toBe("3600");
    expect(got.headers.urgency).toBe("high");

    const [, jwt, k] = /^vapid t=([^,]+), k=([A-Za-z0-9_-]+)$/.exec(String(got.headers.authorization))!;
    expect(k).toBe(publicKey);
    const point = Buffer.from(k!, "base64url");
    const key = await importJWK(
      { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") },
      "ES256",
    );
    const { payload: claims } = await jwtVerify(jwt!, key, { audience: push.url });
    expect(String(claims.sub)).toMatch(/^(mailto|https):/);

    const plaintext = ece.decrypt(got.body, { version: "aes128gcm", privateKey: browser, authSecret: auth });
    const message = JSON.parse(plaintext.toString()) as { title: string; body: string; url: string; event: string; tag: string };
    expect(message).toMatchObject({ event: "permission.requested", title: "mock on local needs you", body: "Write hello.txt" });
    expect(message.url).toMatch(new RegExp(`^${rt.url}/sessions/ses-[0-9a-f]{16}-local$`));

    // The browser unsubscribed: the push service answers 410 and the subscription is gone.
    push.statuses.push(410);
    const { sessions } = (await (await rt.api("/v1/sessions?state=waiting")).json()) as { sessions: { id: string; pending: { requestId: number } }[] };
    const waiting = sessions.find((s) => message.url.endsWith(s.id))!;
    await post(`/v1/sessions/${waiting.id}/permission`, { requestId: waiting.pending.requestId, optionId: "allow" });
    await turn;
    const second = rpc(rt, "pushed", {
      jsonrpc: "2.0",
      id: nextId++,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "/permission" }] },
    });
    const gone = async () =>
      !((await (await rt.api("/v1/notifications/subscriptions")).json()) as { subscriptions: { id: string }[] }).subscriptions.some(
        (s) => s.id === subscription.id,
      );
    const answerAgain = waitFor(async () => {
      const { sessions: now } = (await (await rt.api("/v1/sessions?state=waiting")).json()) as { sessions: { id: string; pending: { requestId: number } }[] };
      const again = now.find((s) => s.id === waiting.id);
      if (again) await post(`/v1/sessions/${waiting.id}/permission`, { requestId: again.pending.requestId, optionId: "allow" });
      return again;
    }, "the second question");
    await waitFor(gone, "the subscription to be dropped after the 410", 10_000);
    await answerAgain;
    await second;
    const attempts = (await (await rt.api(`/v1/notifications/deliveries?limit=500`)).json()) as {
      deliveries: { subscriptionId: string; outcome: string; httpStatus: number }[];
    };
    expect(attempts.deliveries.filter((d) => d.subscriptionId === subscription.id).map((d) => [d.outcome, d.httpStatus])).toEqual([
      ["dropped", 410],
      ["delivered", 201],
    ]);
    await push.close();
  });
});
