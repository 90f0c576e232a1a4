/**
 * Previews through the worker, the machine's object, the tunnel and a real sidecar, to a real Node HTTP
 * server on the machine: pages, bodies streamed both ways (100 MiB included), SSE, redirects, cookies, a
 * WebSocket echo, a browser that stops reading, and each clear refusal. Path mode first, then host mode
 * (PREVIEW_DOMAIN) through a `Host` header.
 */
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";
import { freePort, patternPiece, type PreviewApp, startPreviewApp } from "./preview-app";

let rt: Runtime;
let app: PreviewApp;
let silentPort: number;
let hiddenPort: number;

beforeAll(async () => {
  app = await startPreviewApp();
  silentPort = await freePort();
  hiddenPort = await freePort();
  rt = await startRuntime({ machines: [] });
  await rt.addSidecar("local", { AGENT_RUNTIME_EXPOSE_PORTS: `${app.port},${silentPort}` });
});
afterAll(async () => {
  await rt?.dispose();
  await app?.close();
});

async function open(port: number, token = rt.token): Promise<{ url: string; mode: string; expiresAtMs: number }> {
  const res = await rt.api(`/v1/ports/${port}/preview`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(201);
  return (await res.json()) as { url: string; mode: string; expiresAtMs: number };
}

/** SHA-256 of `size` bytes of the app's pattern, as the app sends them. */
function patternHash(size: number): string {
  const hash = createHash("sha256");
  const piece = patternPiece(64 * 1024);
  for (let sent = 0; sent < size; sent += piece.length) hash.update(piece.subarray(0, Math.min(piece.length, size - sent)));
  return hash.digest("hex");
}

describe("path mode", () => {
  let base: string;
  beforeAll(async () => {
    const opened = await open(app.port);
    expect(opened.mode).toBe("path");
    expect(opened.url).toMatch(new RegExp(`^${rt.url}/machines/local/ports/${app.port}/~[0-9a-f]{32}/$`));
    base = opened.url;
  });

  it("lists the machine's listening ports, the app's among them, allowed", async () => {
    const res = await rt.api("/v1/ports");
    expect(res.status).toBe(200);
    const { ports, expose } = (await res.json()) as { ports: { port: number; allowed: boolean; addresses: string[] }[]; expose: string };
    expect(expose).toBe(`${app.port},${silentPort}`);
    expect(ports.find((p) => p.port === app.port)).toMatchObject({ allowed: true, addresses: ["127.0.0.1"] });
    // The worker's own port is on this machine too, and not exposed.
    expect(ports.find((p) => p.port === Number(new URL(rt.url).port))).toMatchObject({ allowed: false });
  });

  it("serves a page sandboxed, the app seeing itself as localhost and none of the runtime's cookies", async () => {
    const res = await fetch(`${base}hello?name=phone`, { headers: { cookie: "ar_signin=secret; app_theme=dark" } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("<h1>hello phone</h1>");
    expect(res.headers.get("content-security-policy")).toContain("sandbox allow-scripts");
    expect(res.headers.get("content-security-policy")).not.toContain("allow-same-origin");
    expect(res.headers.get("set-cookie")).toBeNull(); // it would be the dashboard origin's
    expect(app.lastHeaders.host).toBe(`localhost:${app.port}`);
    expect(app.lastHeaders.cookie).toBe("app_theme=dark");
    expect(app.lastHeaders["x-forwarded-prefix"]).toBe(new URL(base).pathname.slice(0, -1));
  });

  it("keeps redirects inside the preview", async () => {
    const prefix = new URL(base).pathname.slice(0, -1);
    for (const [to, expected] of [
      ["/login", `${prefix}/login`],
      [`http://localhost:${app.port}/home?x=1`, `${rt.url}${prefix}/home?x=1`],
      ["https://example.com/", "https://example.com/"],
      ["relative", "relative"],
    ]) {
      const res = await fetch(`${base}redirect?to=${encodeURIComponent(to ?? "")}`, { redirect: "manual" });
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toBe(expected);
    }
  });

  it("streams a request body to the app and its answer back", async () => {
    const body = randomBytes(3 * 1024 * 1024 + 17);
    const res = await fetch(`${base}echo-hash`, { method: "POST", body });
    expect(await res.json()).toEqual({ bytes: body.length, sha256: createHash("sha256").update(body).digest("hex") });
  });

  it("carries 100 MiB each way, whole", async () => {
    const size = 100 * 1024 * 1024;
    const down = await fetch(`${base}bytes?size=${size}`);
    const hash = createHash("sha256");
    let received = 0;
    for await (const chunk of down.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      received += chunk.length;
    }
    expect(received).toBe(size);
    expect(hash.digest("hex")).toBe(patternHash(size));
    // Up: a body generated as it is sent, never whole here either.
    const piece = patternPiece(64 * 1024);
    let sent = 0;
    const upload = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= size) return controller.close();
        const part = piece.subarray(0, Math.min(piece.length, size - sent));
        sent += part.length;
        controller.enqueue(part);
      },
    });
    const up = await fetch(`${base}echo-hash`, { method: "POST", body: upload, duplex: "half" } as RequestInit);
    expect(await up.json()).toEqual({ bytes: size, sha256: patternHash(size) });
  }, 120_000);

  it("streams server-sent events as they are written", async () => {
    const res = await fetch(`${base}events`);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: first\n\n"); // before the app wrote the rest
    app.releaseEvents();
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toBe("data: second\n\n");
  });

  it("holds back a response nobody reads without holding up other calls, and ends it when the browser leaves", async () => {
    const abandoned = app.abandoned;
    const controller = new AbortController();
    const stalled = await fetch(`${base}endless`, { signal: controller.signal });
    expect(stalled.status).toBe(200);
    // Nobody reads it: the tunnel carries at most its window, and the API answers as ever meanwhile.
    for (let i = 0; i < 5; i++) expect((await rt.api("/v1/machines")).status).toBe(200);
    const echo = await fetch(`${base}echo-hash`, { method: "POST", body: "x" });
    expect(((await echo.json()) as { bytes: number }).bytes).toBe(1);
    controller.abort();
    await waitFor(async () => app.abandoned > abandoned, "the app's endless response ends once the browser left");
  });

  it("relays a WebSocket with its subprotocol, text and binary", async () => {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}socket`, ["echo-v1"]);
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    expect(ws.protocol).toBe("echo-v1");
    const messages: [string, boolean][] = [];
    ws.on("message", (data, isBinary) => messages.push([Buffer.from(data as Buffer).toString("hex"), isBinary]));
    ws.send("hot update");
    ws.send(Buffer.from([1, 2, 3]));
    await waitFor(async () => messages.length === 2, "both echoes");
    expect(messages).toEqual([
      [Buffer.from("hot update").toString("hex"), false],
      ["010203", true],
    ]);
    ws.close();
  });

  it("refuses clearly: no pass, a wrong pass, a port not exposed, nothing listening", async () => {
    const noPass = await fetch(`${rt.url}/machines/local/ports/${app.port}/hello`);
    expect(noPass.status).toBe(401);
    expect((await problemOf(noPass)).detail).toContain("no pass");
    const wrong = await fetch(`${rt.url}/machines/local/ports/${app.port}/~${"0".repeat(32)}/hello`);
    expect(wrong.status).toBe(401);
    const hidden = await fetch(`${(await open(hiddenPort)).url}`);
    expect(hidden.status).toBe(403);
    const refusal = await problemOf(hidden);
    expect(errorCode(refusal)).toBe("port_not_allowed");
    expect(refusal.detail).toContain(`--expose-ports ${hiddenPort}`);
    const silent = await fetch(`${(await open(silentPort)).url}`);
    expect(silent.status).toBe(502);
    const nothing = await problemOf(silent);
    expect(errorCode(nothing)).toBe("port_unreachable");
    expect(nothing.detail).toContain(`port ${silentPort}`);
  });

  it("needs the member role, and ends with its token", async () => {
    const mint = async (role: string) => {
      const res = await rt.api("/v1/tokens", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: `preview-${role}`, role }),
      });
      return (await res.json()) as { id: string; token: string };
    };
    const viewer = await mint("viewer");
    const refused = await rt.api(`/v1/ports/${app.port}/preview`, { method: "POST", headers: { authorization: `Bearer ${viewer.token}` } });
    expect(refused.status).toBe(403);
    const member = await mint("member");
    const { url } = await open(app.port, member.token);
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}hello`)).status).toBe(200);
    // One line per visit (the opening), none per request of it.
    const audit = (await (await rt.api("/v1/audit?token=preview-member")).json()) as {
      entries: { method: string; route: string; machine: string; status: number }[];
    };
    expect(audit.entries.map((e) => [e.method, e.route, e.machine, e.status])).toEqual([["POST", "/v1/ports/{port}/preview", "local", 201]]);
    expect((await rt.api(`/v1/tokens/${member.id}`, { method: "DELETE" })).status).toBeLessThan(300);
    await waitFor(async () => (await fetch(`${url}hello`)).status === 401, "the revoked token's preview ends");
  });
});

/** A request to the worker as if to another host (Node's resolver may not know `*.localhost`). */
function requestAs(url: string, init: { headers?: Record<string, string> } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const target = new URL(url);
  const worker = new URL(rt.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: worker.hostname, port: worker.port, path: `${target.pathname}${target.search}`, headers: { host: target.host, ...init.headers } },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("host mode (PREVIEW_DOMAIN)", () => {
  beforeAll(async () => {
    await rt.restartWorker({ PREVIEW_DOMAIN: "localhost" });
    await rt.sidecars.get("local")?.connected(30_000);
  }, 60_000);

  it("trades a one-time link for a cookie of that host only, then serves the app at its root", async () => {
    const opened = await open(app.port);
    expect(opened.mode).toBe("host");
    const link = new URL(opened.url);
    expect(link.host).toBe(`${app.port}--local.localhost:${new URL(rt.url).port}`);
    const landed = await requestAs(opened.url);
    expect(landed.status).toBe(303);
    expect(landed.headers.location).toBe("/");
    const cookie = (landed.headers["set-cookie"] ?? [])[0] ?? "";
    expect(cookie).toMatch(/^__Host-ar_preview=local\.[0-9a-f]{32}; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    expect((await requestAs(opened.url)).status).toBe(401); // a link works once
    // A token sent to the preview's host, in a header or the query, is the runtime's: the app sees neither.
    const page = await requestAs(`${link.origin}/hello?name=host&access_token=${rt.token}`, {
      headers: { cookie: cookie.split(";")[0] ?? "", authorization: `Bearer ${rt.token}`, "proxy-authorization": `Bearer ${rt.token}` },
    });
    expect(page.status).toBe(200);
    expect(page.body).toBe("<h1>hello host</h1>");
    expect(page.headers["content-security-policy"]).toBeUndefined();
    // The app's own cookies, bound to this host however their Domain was spelled; none named as the runtime's.
    expect(page.headers["set-cookie"]).toEqual(["app_session=1; Path=/", "app_b=2; Path=/", "app_c=3"]);
    expect(app.lastHeaders.cookie).toBeUndefined();
    expect(app.lastHeaders.authorization).toBeUndefined();
    expect(app.lastHeaders["proxy-authorization"]).toBeUndefined();
    expect(app.lastUrl).toBe("/hello?name=host");
    // Without the cookie, or on another port's host with it, nothing is served.
    expect((await requestAs(`${link.origin}/hello`)).status).toBe(401);
    const other = `http://${silentPort}--local.localhost:${new URL(rt.url).port}/hello`;
    expect((await requestAs(other, { headers: { cookie: cookie.split(";")[0] ?? "" } })).status).toBe(401);
    // Every path of a preview's host is the app's: the dashboard's own addresses and files (Workers Static
    // Assets, which match paths, never hosts) reach the app, whose answer to an unknown path is its 404.
    const dashboardPage = await (await fetch(`${rt.url}/`)).text();
    const dashboardScript = /src="(\/assets\/[^"]+\.js)"/.exec(dashboardPage)![1]!;
    const withCookie = { headers: { cookie: cookie.split(";")[0] ?? "", accept: "text/html" } };
    expect(await requestAs(`${link.origin}/`, withCookie)).toMatchObject({ status: 200, body: "the app's home page" });
    for (const path of ["/sessions", "/sw.js", "/manifest.webmanifest", dashboardScript]) {
      const answer = await requestAs(`${link.origin}${path}`, withCookie);
      expect([path, answer.status, answer.body]).toEqual([path, 404, "not here"]);
    }
    // The worker's own host still serves the API.
    expect((await rt.api("/v1/machines")).status).toBe(200);
  });

  it("sends a link's `to` only to a path of the preview's own origin", async () => {
    for (const [to, where] of [
      ["/hello?name=x", "/hello?name=x"],
      ["/%5Cevil.example/x", "/"],
      ["/%09/evil.example/x", "/"],
      ["//evil.example/x", "/"],
    ]) {
      const opened = await open(app.port);
      const landed = await requestAs(`${opened.url}&to=${encodeURIComponent(to!).replace(/%2F/g, "/").replace(/%25/g, "%")}`);
      expect([to, landed.status, landed.headers.location]).toEqual([to, 303, where]);
    }
  });

  it("refuses a WebSocket opened by a page of another origin", async () => {
    const opened = await open(app.port);
    const landed = await requestAs(opened.url);
    const cookie = ((landed.headers["set-cookie"] ?? [])[0] ?? "").split(";")[0] ?? "";
    const origin = new URL(opened.url).origin;
    const socket = (from: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${new URL(rt.url).port}/socket`, ["echo-v1"], {
          headers: { host: new URL(origin).host, cookie, origin: from },
        });
        ws.once("open", () => {
          ws.close();
          resolve(101);
        });
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      });
    expect(await socket(origin)).toBe(101);
    expect(await socket("http://evil.localhost:1234")).toBe(403);
  });
});

describe("machine away", () => {
  it("answers 503 while the machine's sidecar is gone", async () => {
    await rt.restartWorker({ PREVIEW_DOMAIN: "" });
    await rt.sidecars.get("local")?.connected(30_000);
    const { url } = await open(app.port);
    await rt.sidecars.get("local")?.stop();
    const res = await fetch(`${url}hello`);
    expect(res.status).toBe(503);
    expect(errorCode(await problemOf(res))).toBe("machine_offline");
  }, 60_000);
});
