/**
 * Trust against the real runtime: issued tokens with roles and machine scopes, expiry and revocation,
 * per-machine revocation of machine tokens, the audit log, no secret a spawned process can find, and
 * no implicit default machine.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSidecar } from "../dev/runtime";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type Token = { id: string; name: string; role: string; token: string; machines: string[] | "*"; expiresAtMs: number | null };
type Audit = {
  entries: { seq: number; token: string; role: string | null; method: string; route: string; machine: string | null; status: number }[];
  nextBefore: number | null;
};

let rt: Runtime;
let home: string;

beforeAll(async () => {
  rt = await startRuntime({ machines: [], vars: { DEFAULT_MACHINE: "a" } });
  home = join(rt.dir, "home");
  await mkdir(home, { recursive: true });
  await rt.addSidecar("a", { HOME: home });
  await rt.addSidecar("b", { HOME: home });
});
afterAll(async () => {
  await rt?.dispose();
});

function as(token: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  if (init.body) headers.set("content-type", "application/json");
  return fetch(`${rt.url}${path}`, { ...init, headers });
}

async function issue(body: Record<string, unknown>): Promise<Token> {
  const res = await rt.api("/v1/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Token;
}

const spawnBody = JSON.stringify({ command: "true" });

async function audit(query: string): Promise<Audit["entries"]> {
  const res = await rt.api(`/v1/audit?${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as Audit).entries;
}

describe("issued tokens", () => {
  it("shows the secret once and keeps only its hash; the list never shows it", async () => {
    const t = await issue({ name: "ci-reader", role: "viewer" });
    expect(t.token).toMatch(/^art\.[0-9a-f]{16}\./);
    const list = await (await rt.api("/v1/tokens")).text();
    expect(list).toContain('"ci-reader"');
    expect(list).not.toContain(t.token);
    expect(list).not.toContain(t.token.split(".")[2]);
    const me = (await (await as(t.token, "/v1/whoami")).json()) as { name: string; role: string };
    expect(me).toMatchObject({ name: "ci-reader", role: "viewer" });
  });

  it("a viewer can list but not spawn (403 naming the role), nor manage tokens or the team's skills", async () => {
    const viewer = await issue({ name: "viewer-vic", role: "viewer" });
    expect((await as(viewer.token, "/v1/processes")).status).toBe(200);
    expect((await as(viewer.token, "/machines/b/v1/agents")).status).toBe(200);
    const spawn = await as(viewer.token, "/v1/processes", { method: "POST", body: spawnBody });
    expect(spawn.status).toBe(403);
    const problem = await problemOf(spawn);
    expect(errorCode(problem)).toBe("permission_denied");
    expect(problem).toMatchObject({ requiredRole: "member", role: "viewer" });
    expect((await as(viewer.token, "/v1/tokens")).status).toBe(403);
    expect((await as(viewer.token, "/v1/config/skills", { method: "PUT", body: JSON.stringify({ sources: [] }) })).status).toBe(403);
    expect((await as(viewer.token, "/v1/audit")).status).toBe(403);

    const entries = await audit("token=viewer-vic");
    expect(entries.find((e) => e.method === "POST" && e.route === "/v1/processes")).toMatchObject({ status: 403, role: "viewer", machine: "a" });
  });

  it("a member scoped to machine a acts on a, cannot touch b, and sees only a", async () => {
    const member = await issue({ name: "member-mia", role: "member", machines: ["a"] });
    const onA = await as(member.token, "/machines/a/v1/processes", { method: "POST", body: spawnBody });
    expect(onA.status).toBe(201);
    const viaDefault = await as(member.token, "/v1/processes", { method: "POST", body: spawnBody });
    expect(viaDefault.status).toBe(201);
    for (const [method, path] of [
      ["POST", "/machines/b/v1/processes"],
      ["GET", "/machines/b/v1/processes"],
      ["GET", "/machines/b/v1/health"],
    ] as const) {
      const res = await as(member.token, path, method === "POST" ? { method, body: spawnBody } : { method });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(await problemOf(res)).toMatchObject({ machine: "b" });
    }
    const machines = (await (await as(member.token, "/v1/machines")).json()) as { machines: { id: string }[] };
    expect(machines.machines.map((m) => m.id)).toEqual(["a"]);
    expect((await as(member.token, "/v1/tokens", { method: "POST", body: JSON.stringify({ name: "x", role: "admin" }) })).status).toBe(403);

    const entries = await audit("token=member-mia");
    expect(entries.filter((e) => e.route === "/machines/{machine}/v1/processes" && e.machine === "b").map((e) => [e.method, e.status])).toContainEqual([
      "POST",
      403,
    ]);
    expect(entries.filter((e) => e.method === "POST" && e.status === 201).map((e) => e.machine)).toEqual(["a", "a"]);
  });

  it("refuses a revoked token from the next request on, and an expired one, both audited by name", async () => {
    const short = await issue({ name: "short-lived", role: "member", expiresInSeconds: 1 });
    const revoked = await issue({ name: "to-revoke", role: "member" });
    expect((await as(revoked.token, "/v1/processes")).status).toBe(200);
    expect((await rt.api(`/v1/tokens/${revoked.id}`, { method: "DELETE" })).status).toBe(200);
    const after = await as(revoked.token, "/v1/processes");
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain("Bearer");
    expect((await problemOf(after)).detail).toContain("'to-revoke' is revoked");

    const expired = await waitFor(async () => {
      const res = await as(short.token, "/v1/processes");
      return res.status === 401 ? res : null;
    }, "the 1 s token to expire");
    expect((await problemOf(expired)).detail).toContain("'short-lived' is expired");

    for (const name of ["to-revoke", "short-lived"]) {
      const entries = await waitFor(async () => {
        const found = await audit(`token=${name}&status=401`);
        return found.length ? found : null;
      }, `the audit entry of ${name}`);
      expect(entries[0]).toMatchObject({ method: "GET", route: "/v1/processes" });
    }
    const list = (await (await rt.api("/v1/tokens")).json()) as { tokens: { name: string; revokedAtMs: number | null; lastUsedMs: number | null }[] };
    expect(list.tokens.find((t) => t.name === "to-revoke")).toMatchObject({ revokedAtMs: expect.any(Number), lastUsedMs: expect.any(Number) });
  });

  it("refuses unknown and malformed tokens with 401 and WWW-Authenticate, and audits the refusal", async () => {
    for (const token of ["art.0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "nope"]) {
      const res = await as(token, "/v1/processes", { method: "POST", body: spawnBody });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agent-runtime", error="invalid_token"');
    }
    const missing = await fetch(`${rt.url}/v1/processes`);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="agent-runtime"');
    const entries = await audit("status=401");
    expect(entries.map((e) => e.token)).toEqual(expect.arrayContaining(["(unknown token 0123456789abcdef)", "(unknown token)", "(no token)"]));
  });

  it("accepts ?access_token= on an SSE GET only (browsers cannot set headers there), and never records it", async () => {
    const viewer = await issue({ name: "browser-bea", role: "viewer" });
    const spawned = await rt.api("/v1/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "echo", args: ["via-sse"] }),
    });
    const { id } = (await spawned.json()) as { id: string };
    const sse = await fetch(`${rt.url}/v1/processes/${id}/logs?follow=true&access_token=${viewer.token}`, { headers: { accept: "text/event-stream" } });
    expect(sse.status).toBe(200);
    expect(await sse.text()).toContain("via-sse");
    const json = await fetch(`${rt.url}/v1/processes?access_token=${viewer.token}`);
    expect(json.status).toBe(401);
    const audit = await (await rt.api("/v1/audit?limit=500")).text();
    expect(audit).not.toContain(viewer.token);
  });

  it("pages the audit log, newest first", async () => {
    const first = (await (await rt.api("/v1/audit?limit=2")).json()) as Audit;
    expect(first.entries).toHaveLength(2);
    expect(first.entries[0]!.seq).toBeGreaterThan(first.entries[1]!.seq);
    const next = (await (await rt.api(`/v1/audit?limit=2&before=${first.nextBefore}`)).json()) as Audit;
    expect(next.entries[0]!.seq).toBeLessThan(first.entries[1]!.seq);
  });
});

describe("machine tokens", () => {
  it("revoking machine a refuses its sidecar at the next connect, while b stays connected; a new token connects again", async () => {
    const sidecarA = rt.sidecars.get("a")!;
    const revoke = await rt.api("/v1/machine-tokens/a", { method: "DELETE" });
    expect(revoke.status).toBe(200);
    expect(((await revoke.json()) as { generation: number }).generation).toBe(2);
    expect(await sidecarA.stop("SIGCONT")).toBe(2); // disconnected, redialed, refused: exit 2
    expect(sidecarA.logs()).toContain("were revoked");
    const health = (await (await rt.api("/machines/b/v1/health")).json()) as { machine: { connected: boolean } };
    expect(health.machine.connected).toBe(true);

    const minted = await rt.api("/v1/machine-tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ machine: "a" }),
    });
    expect(minted.status).toBe(201);
    const { token, generation, connectCommand } = (await minted.json()) as { token: string; generation: number; connectCommand: string };
    expect(generation).toBe(2);
    expect(connectCommand).toContain("login --url");
    expect(connectCommand).not.toMatch(/--token\b/);
    const again = await startSidecar({
      url: rt.url,
      machine: "a",
      tunnelSecret: rt.tunnelSecret,
      token,
      dataDir: join(rt.dir, "data-a"),
      workdir: rt.dir,
      env: { HOME: home },
    });
    rt.sidecars.set("a", again);
    await again.connected();

    const refusals = await audit("machine=a&status=401");
    expect(refusals.find((e) => e.route === "/_tunnel/{machine}")).toMatchObject({ token: "machine token of 'a' (generation 1)", method: "GET" });
    const entries = await audit("token=API_TOKEN&machine=a");
    expect(entries.map((e) => `${e.method} ${e.route} ${e.status}`)).toEqual(
      expect.arrayContaining(["DELETE /v1/machine-tokens/{machine} 200", "POST /v1/machine-tokens 201"]),
    );
  });

  it("a process spawned on the machine finds the machine token nowhere it can read", async () => {
    const sidecar = rt.sidecars.get("a")!;
    const minted = await rt.api("/v1/machine-tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ machine: "a" }),
    });
    const { token } = (await minted.json()) as { token: string };
    // What the running sidecar holds: its token is the one it connected with; any token of `a` shares its MAC prefix.
    const tokenPrefix = token.split(".").slice(0, 3).join(".");
    const script = 'env; tr "\\0" "\\n" < /proc/$PPID/environ; tr "\\0" " " < /proc/$PPID/cmdline; ls -l /proc/$PPID/fd; echo DONE';
    const spawned = await rt.api("/machines/a/v1/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "sh", args: ["-c", script] }),
    });
    const { id, pid } = (await spawned.json()) as { id: string; pid: number };
    expect(pid).toBeGreaterThan(0);
    const output = await waitFor(async () => {
      const logs = (await (await rt.api(`/machines/a/v1/processes/${id}/logs`)).json()) as { entries: { data: string }[] };
      const text = logs.entries.map((e) => e.data).join("");
      return text.includes("DONE") ? text : null;
    }, "the script's output");
    expect(output).toContain(`--machine a`); // it did read the sidecar's command line
    expect(output).not.toContain(tokenPrefix);
    expect(output).not.toContain("mt2.");
    expect(output).not.toMatch(/AGENT_RUNTIME_TOKEN|TUNNEL_SECRET|API_TOKEN/);
    expect(sidecar.logs()).not.toContain("mt2.");
    // Every file under the machine's HOME, data folder and working folder.
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        const info = statSync(path, { throwIfNoEntry: false });
        if (info?.isDirectory()) walk(path);
        else if (info?.isFile() && info.size < 4 * 1024 * 1024) files.push(path);
      }
    };
    walk(rt.dir);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(readFileSync(file, "utf8").includes("mt2."), file).toBe(false);
  });
});

describe("the default machine", () => {
  it("is never a machine nobody named, even when only one is connected", async () => {
    const lone = await startRuntime({ machines: ["solo"], vars: { DEFAULT_MACHINE: "" } });
    try {
      const res = await lone.api("/v1/processes");
      expect(res.status).toBe(400);
      expect(await problemOf(res)).toMatchObject({ machines: ["solo"] });
      expect((await lone.api("/machines/solo/v1/processes")).status).toBe(200);
    } finally {
      await lone.dispose();
    }
  });
});

describe("Cloudflare Access", () => {
  it("maps a verified Access identity's email to a role, and refuses forged, foreign or role-less ones", async () => {
    const { generateKeyPair, exportJWK, SignJWT } = await import("jose");
    const { createServer } = await import("node:http");
    const { privateKey, publicKey } = await generateKeyPair("RS256");
    const { privateKey: strangerKey } = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    let certsFetched = 0;
    const certs = createServer((_req, res) => {
      certsFetched++;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => certs.listen(0, "127.0.0.1", resolve));
    const port = (certs.address() as { port: number }).port;
    const issuer = "https://example-team.cloudflareaccess.com";
    const aud = "app-audience-tag";
    const access = await startRuntime({
      machines: ["local"],
      vars: {
        CF_ACCESS_AUD: aud,
        CF_ACCESS_TEAM_DOMAIN: "example-team.cloudflareaccess.com",
        CF_ACCESS_CERTS_URL: `http://127.0.0.1:${port}/cdn-cgi/access/certs`,
        CF_ACCESS_ROLES: "alice@example.com=member, *@example.com=viewer",
      },
    });
    const assertion = (email: string, opts: { key?: CryptoKey; audience?: string } = {}) =>
      new SignJWT({ email })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setIssuer(issuer)
        .setAudience(opts.audience ?? aud)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(opts.key ?? privateKey);
    const call = async (jwt: string, method = "GET") =>
      fetch(`${access.url}/v1/processes`, {
        method,
        headers: { "cf-access-jwt-assertion": jwt, ...(method === "POST" ? { "content-type": "application/json" } : {}) },
        ...(method === "POST" ? { body: spawnBody } : {}),
      });
    try {
      expect((await call(await assertion("alice@example.com"), "POST")).status).toBe(201);
      expect((await call(await assertion("bob@example.com"))).status).toBe(200);
      expect((await call(await assertion("bob@example.com"), "POST")).status).toBe(403);
      for (const [jwt, why] of [
        [await assertion("mallory@elsewhere.org"), "has no role"],
        [await assertion("alice@example.com", { key: strangerKey as CryptoKey }), "not valid"],
        [await assertion("alice@example.com", { audience: "another-app" }), "not valid"],
      ] as const) {
        const res = await call(jwt);
        expect(res.status).toBe(401);
        expect((await problemOf(res)).detail).toContain(why);
      }
      expect(certsFetched).toBeGreaterThan(0);
      const entries = (await (await access.api("/v1/audit?token=alice@example.com")).json()) as Audit;
      expect(entries.entries[0]).toMatchObject({ method: "POST", status: 201, role: "member" });
    } finally {
      await access.dispose();
      certs.close();
    }
  });
});
