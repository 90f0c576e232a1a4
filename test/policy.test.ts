/**
 * The team's permission policy (docs/architecture.md, "The permission policy"), end to end with the mock
 * agent asking for reads, edits and commands inside and outside its folder: each rule decides as written,
 * a decided request never reaches a reader or a client (and a client's answer to it is refused), an ask
 * with a deadline falls to its answer, only asks notify, every automatic answer is in the transcript and
 * the audit log, and a session's own policy cannot loosen a team deny.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, rpc, type SseEvent } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type Entry = { seq: number; kind: string; text?: string; data?: Record<string, unknown> };
type Session = { id: string; state: string; pending: { requestId: number | string; title: string; deadline?: { atMs: number; onTimeout: string } } | null };

let rt: Runtime;
let hook: { url: string; got: { event: string; permission?: { title: string } }[]; close(): Promise<void> };
beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
  const got: { event: string; permission?: { title: string } }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push(JSON.parse(Buffer.concat(chunks).toString()));
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  hook = { url, got, close: () => new Promise((r) => server.close(() => r())) };
});
afterAll(async () => {
  await hook?.close();
  await rt?.dispose();
});

const send = (path: string, method: string, body: unknown, headers: Record<string, string> = {}) =>
  rt.api(path, { method, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

const TEAM_POLICY = {
  rules: [
    { name: "no rm", match: { kinds: ["execute"], commands: ["rm *"] }, decision: "deny" },
    { name: "reads in the project", match: { kinds: ["read"], outsideFolder: false }, decision: "allow" },
    { name: "edits in src", match: { kinds: ["edit"], paths: ["src/**"] }, decision: "allow" },
    { name: "edits elsewhere", match: { kinds: ["edit"], outsideFolder: true }, decision: "ask", ask: { timeoutSeconds: 5, onTimeout: "deny" } },
  ],
};

let nextId = 10;
async function newSession(serverId: string, meta?: unknown): Promise<Response> {
  await rpc(rt, serverId, { jsonrpc: "2.0", id: nextId++, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  return rpc(rt, serverId, { jsonrpc: "2.0", id: nextId++, method: "session/new", params: { cwd: rt.dir, mcpServers: [], ...(meta ? { _meta: meta } : {}) } });
}

/** One turn of the mock's `/permission <args>`: what it said at the end (the turn's last text). */
async function ask(serverId: string, sessionId: string, args: string): Promise<Response> {
  return rpc(rt, serverId, {
    jsonrpc: "2.0",
    id: nextId++,
    method: "session/prompt",
    params: { sessionId, prompt: [{ type: "text", text: `/permission ${args}` }] },
  });
}

async function recordOf(serverId: string): Promise<Session> {
  const list = (await (await rt.api("/v1/sessions")).json()) as { sessions: (Session & { serverId: string })[] };
  return list.sessions.find((s) => s.serverId === serverId)!;
}

async function transcript(id: string): Promise<Entry[]> {
  return ((await (await rt.api(`/v1/sessions/${id}/transcript`)).json()) as { entries: Entry[] }).entries;
}

const lastText = (entries: Entry[]) => entries.filter((e) => e.kind === "text").at(-1)?.text;
const permissionRequests = (events: SseEvent[]) => events.filter((e) => (e.data as { method?: string }).method === "session/request_permission");

describe("the permission policy", () => {
  let sessionId: string;
  let record: Session;
  let reader: Promise<SseEvent[]>;

  it("is a team document: admin writes it with If-Match, every machine's object reports the version it holds", async () => {
    const read = await rt.api("/v1/config/policy");
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ rules: [] });
    const bad = await send("/v1/config/policy", "PUT", { rules: [{ decision: "allow", ask: { timeoutSeconds: 60, onTimeout: "deny" } }] });
    expect(bad.status).toBe(400);
    const put = await send("/v1/config/policy", "PUT", TEAM_POLICY, { "if-match": read.headers.get("etag")! });
    expect(put.status, await put.clone().text()).toBe(200);
    const etag = put.headers.get("etag");
    const status = await waitFor(async () => {
      const body = (await (await rt.api("/v1/config/policy/status")).json()) as { version: string; machines: { machine: string; version: string | null }[] };
      return body.machines.find((m) => m.machine === "local" && m.version === etag) ? body : null;
    }, "the machine's object to hold the policy");
    expect(status.version).toBe(etag);

    const subscribed = await send("/v1/notifications/subscriptions", "POST", {
      kind: "webhook",
      url: hook.url,
      secret: "0123456789abcdef",
      events: ["permission.requested"],
    });
    expect(subscribed.status, await subscribed.clone().text()).toBe(201);
  });

  it("answers what its rules decide at once: no reader sees the request, the transcript names the rule", async () => {
    const created = await newSession("pol");
    sessionId = ((await created.json()) as { result: { sessionId: string } }).result.sessionId;
    record = await recordOf("pol");
    reader = readSse(rt, "pol", {
      until: (events) => events.some((e) => JSON.stringify(e.data).includes("Permission granted: read /etc/hosts")),
      timeoutMs: 60_000,
    });

    expect((await ask("pol", sessionId, "read src/a.ts")).status).toBe(200);
    expect(lastText(await transcript(record.id))).toContain("Permission granted: read src/a.ts");
    expect((await ask("pol", sessionId, "edit src/deep/b.ts")).status).toBe(200);
    expect(lastText(await transcript(record.id))).toContain("Permission granted: edit src/deep/b.ts");
    expect((await ask("pol", sessionId, "execute cd /tmp && rm -rf ~")).status).toBe(200);
    expect(lastText(await transcript(record.id))).toContain("Permission denied: Run cd /tmp && rm -rf ~");

    const entries = await transcript(record.id);
    const answers = entries.filter((e) => e.kind === "permission_answer").map((e) => e.data);
    expect(answers).toMatchObject([
      { optionId: "allow", policy: { decision: "allow", rule: "reads in the project", source: "team" } },
      { optionId: "allow", policy: { decision: "allow", rule: "edits in src" } },
      { optionId: "reject", policy: { decision: "deny", rule: "no rm" } },
    ]);
    expect((await recordOf("pol")).state).toBe("idle");

    // A client answering a request the policy answered is refused: the agent had its answer.
    const requestId = entries.find((e) => e.kind === "permission")!.data!.requestId;
    const late = await rpc(rt, "pol", { jsonrpc: "2.0", id: requestId, result: { outcome: { outcome: "selected", optionId: "reject" } } });
    expect(late.status).toBe(409);
    expect(errorCode(await problemOf(late))).toBe("conflict");
  });

  it("asks a person when no rule speaks: the reader sees it, people are told", async () => {
    const turn = ask("pol", sessionId, "read /etc/hosts");
    const waiting = await waitFor(async () => {
      const s = await recordOf("pol");
      return s.state === "waiting" ? s : null;
    }, "the session to wait for a person");
    expect(waiting.pending).toMatchObject({ title: "read /etc/hosts" });
    expect(waiting.pending!.deadline).toBeUndefined();
    const answered = await send(`/v1/sessions/${waiting.id}/permission`, "POST", { requestId: waiting.pending!.requestId, optionId: "allow" });
    expect(answered.status).toBe(200);
    expect((await turn).status).toBe(200);

    // The reader saw only the request a person was asked.
    const seen = permissionRequests(await reader);
    expect(seen.map((e) => (e.data as { params: { toolCall: { title: string } } }).params.toolCall.title)).toEqual(["read /etc/hosts"]);
  });

  it("answers for the person when an ask's deadline passes", async () => {
    const turn = ask("pol", sessionId, "edit ../outside.txt");
    const waiting = await waitFor(async () => {
      const s = await recordOf("pol");
      return s.state === "waiting" ? s : null;
    }, "the session to wait for a person");
    expect(waiting.pending!.deadline).toMatchObject({ onTimeout: "deny" });
    expect((await turn).status).toBe(200);
    const entries = await transcript(record.id);
    expect(lastText(entries)).toContain("Permission denied: edit ../outside.txt");
    expect(entries.some((e) => e.kind === "notice" && e.text?.includes("nobody answered in time: deny (the team's policy, edits elsewhere)"))).toBe(true);

    // Only the asks were notified, and every automatic answer is in the audit log.
    await waitFor(async () => hook.got.length >= 2, "the two asks' webhooks");
    expect(hook.got.map((p) => p.permission?.title)).toEqual(["read /etc/hosts", "edit ../outside.txt"]);
    const audit = await waitFor(async () => {
      const page = (await (await rt.api("/v1/audit?limit=100")).json()) as { entries: { token: string; method: string; route: string; status: number }[] };
      const lines = page.entries.filter((e) => e.method === "POLICY");
      return lines.length >= 4 ? lines : null;
    }, "the policy's audit lines");
    expect(audit.map((e) => [e.status, e.route.replace(/ in session \S+/, "")]).reverse()).toEqual([
      [200, 'policy: allow "read src/a.ts" (the team\'s policy, reads in the project)'],
      [200, 'policy: allow "edit src/deep/b.ts" (the team\'s policy, edits in src)'],
      [403, 'policy: deny "Run cd /tmp && rm -rf ~" (the team\'s policy, no rm)'],
      [403, "policy: deny after nobody answered in time (the team's policy, edits elsewhere)"],
    ]);
    expect(audit.every((e) => e.token === "permission policy")).toBe(true);
  });

  it("lets a session's own policy decide what the team's leaves open, never loosen a team deny", async () => {
    const refused = await newSession("own", { "agent-runtime/policy": { rules: [{ decision: "sometimes" }] } });
    expect(refused.status).toBe(400);
    const created = await newSession("own", { "agent-runtime/policy": { rules: [{ name: "anything", decision: "allow" }] } });
    const own = ((await created.json()) as { result: { sessionId: string } }).result.sessionId;
    const ownRecord = await recordOf("own");
    await ask("own", own, "edit README.md");
    expect(lastText(await transcript(ownRecord.id))).toContain("Permission granted: edit README.md");
    await ask("own", own, "execute rm -rf ~");
    const entries = await transcript(ownRecord.id);
    expect(lastText(entries)).toContain("Permission denied: Run rm -rf ~");
    expect(entries.filter((e) => e.kind === "permission_answer").map((e) => e.data!.policy)).toEqual([
      { decision: "allow", rule: "anything", source: "session" },
      { decision: "deny", rule: "no rm", source: "team" },
    ]);
  });

  it("tells what a policy would do with a sample request", async () => {
    const tried = await send("/v1/config/policy/test", "POST", {
      request: { agent: "claude", machine: "local", cwd: "/home/ada/app", kind: "execute", command: "npm test; rm -rf /" },
    });
    expect(tried.status).toBe(200);
    expect(await tried.json()).toMatchObject({ decision: "deny", rule: 0, ruleName: "no rm", source: "team" });
    const draft = await send("/v1/config/policy/test", "POST", {
      request: { agent: "claude", machine: "local", cwd: "/home/ada/app", kind: "edit", paths: ["docs/x.md"] },
      policy: { rules: [{ match: { paths: ["docs/**"] }, decision: "allow" }] },
    });
    expect(await draft.json()).toMatchObject({ decision: "allow", rule: 0, ruleName: "rule 1" });
    const open = await send("/v1/config/policy/test", "POST", { request: { agent: "claude", machine: "local", cwd: "/a" } });
    expect(await open.json()).toMatchObject({ decision: "ask", rule: null });
  });
});
