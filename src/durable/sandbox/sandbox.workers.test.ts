/**
 * The sandbox the worker asks for (docs/architecture.md, "Sandboxes: the team's rules"), as the fake
 * sidecar receives it: the team's rules decide by agent, machine and origin for a person's session, a task,
 * a schedule's task and a GitHub trigger's task; the session's record keeps what was asked and what the
 * machine's floor makes of it; a restore after a sidecar restart asks for the same sandbox again, even
 * when the team's rules changed since.
 */
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MachineSandbox, SandboxSpec } from "@agent-runtime/protocol/sandbox";
import type { Session } from "@agent-runtime/protocol/sessions";
import type { Task } from "@agent-runtime/protocol/tasks";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";
import type { TeamObject } from "../team/team";

const api = (path: string, init: RequestInit = {}) =>
  SELF.fetch(`https://runtime.test${path}`, {
    ...init,
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json", accept: "application/json", ...(init.headers ?? {}) },
  });

const team = () => env.TEAM.get(env.TEAM.idFromName("team")) as DurableObjectStub<TeamObject>;

const sidecars: FakeSidecar[] = [];
async function connect(machine: string, bootId?: string, sandbox?: MachineSandbox): Promise<FakeSidecar> {
  const sidecar = await FakeSidecar.connect(machine, bootId, sandbox ? { sandbox } : {});
  sidecars.push(sidecar);
  return sidecar;
}
afterEach(() => {
  for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
});

const TRIGGERED: SandboxSpec = { profile: "read-only", network: { mode: "allowlist", allow: ["github.com"] }, denyRead: [] };
const SCHEDULED: SandboxSpec = { profile: "workspace", network: { mode: "none", allow: [] }, denyRead: [] };
const SESSIONS: SandboxSpec = { profile: "full", network: { mode: "open", allow: [] }, denyRead: ["~/private"] };
/** No rule for tasks: the default (mock has no model host of its own). */
const TASK_DEFAULT: SandboxSpec = { profile: "workspace", network: { mode: "allowlist", allow: ["registry.npmjs.org", "github.com"] }, denyRead: [] };

const policy = (sessions: SandboxSpec) => ({
  rules: [],
  sandbox: [
    { name: "triggered", match: { origins: ["trigger"] }, ...TRIGGERED },
    { name: "scheduled", match: { origins: ["schedule"] }, ...SCHEDULED },
    { name: "people", match: { origins: ["session"], agents: ["mock"] }, ...sessions },
  ],
});

let version = "";
async function putPolicy(sessions: SandboxSpec): Promise<void> {
  const put = await api("/v1/config/policy", { method: "PUT", body: JSON.stringify(policy(sessions)) });
  expect(put.status, await put.clone().text()).toBe(200);
  version = put.headers.get("etag")!;
}

/** The machine's object holds the policy's current version (it is kept on connect and by the fan-out). */
async function policyReached(machine: string): Promise<void> {
  await expect
    .poll(async () => {
      const status = (await (await api("/v1/config/policy/status")).json()) as { machines: { machine: string; version: string | null }[] };
      return status.machines.find((m) => m.machine === machine)?.version;
    })
    .toBe(version);
}

beforeAll(() => putPolicy(SESSIONS));

describe("the sandbox asked for", () => {
  it("a person's session: its rule on the calls that start the server and the session, kept on the record with the floor applied", async () => {
    const floor: SandboxSpec = { profile: "workspace", network: { mode: "allowlist", allow: ["github.com"] }, denyRead: ["~/.config/x"] };
    const said: MachineSandbox = { platform: "linux-bwrap", enforceable: ["read-only", "workspace", "full"], missing: null, floor, deny: [], roots: [] };
    const machine = "sandboxed-laptop";
    let sidecar = await connect(machine, "boot-1", said);
    await policyReached(machine);
    const post = (body: unknown, query = "") => api(`/machines/${machine}/v1/acp/s1${query}`, { method: "POST", body: JSON.stringify(body) });

    const initializing = post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    const init = await sidecar.call("acp.post");
    expect(init.args).toMatchObject({ serverId: "s1", agent: "mock", sandbox: SESSIONS });
    sidecar.answer(init, {
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, agentCapabilities: { loadSession: true } } }),
    });
    expect((await initializing).status).toBe(200);

    const starting = post({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/home/me/app", mcpServers: [] } });
    const start = await sidecar.call("acp.post");
    expect(start.args).toMatchObject({ method: "session/new", sandbox: SESSIONS });
    sidecar.answer(start, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 2, result: { sessionId: "acp-1" } }) });
    expect((await starting).status).toBe(200);

    // A prompt does not start anything: it carries no sandbox.
    const prompting = post({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: "acp-1", prompt: [{ type: "text", text: "hi" }] } });
    const prompt = await sidecar.call("acp.post");
    expect(prompt.args.sandbox).toBeUndefined();
    sidecar.answer(prompt, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" } }) });
    expect((await prompting).status).toBe(200);

    const listed = (await (await api(`/machines/${machine}/v1/sessions`)).json()) as { sessions: Session[] };
    const effective: SandboxSpec = { profile: "workspace", network: { mode: "allowlist", allow: ["github.com"] }, denyRead: ["~/private", "~/.config/x"] };
    expect(listed.sessions[0]!.sandbox).toEqual({ origin: "session", requested: SESSIONS, rule: 2, ruleName: "people", effective });

    // The team's rule for sessions changes; then the sidecar restarts. The session's next prompt brings its
    // agent back with the sandbox it was started in, not the new rule's.
    await putPolicy({ profile: "read-only", network: { mode: "none", allow: [] }, denyRead: [] });
    await policyReached(machine);
    sidecar.drop();
    sidecar = await connect(machine, "boot-2", said);
    const again = post({ jsonrpc: "2.0", id: 4, method: "session/prompt", params: { sessionId: "acp-1", prompt: [{ type: "text", text: "again" }] } });
    const gone = await sidecar.call("acp.post");
    sidecar.fail(gone, { code: "invalid_request", detail: "server 's1' is not running", extensions: { notRunning: true } });
    const restore = await sidecar.call("acp.restore");
    expect(restore.args).toMatchObject({ serverId: "s1", agent: "mock", sandbox: SESSIONS });
    expect(restore.args.sessions.map((s) => s.sessionId)).toEqual(["acp-1"]);
    sidecar.answer(restore, { started: true, sessions: [{ sessionId: "acp-1", how: "load" }] });
    const resent = await sidecar.call("acp.post");
    expect(resent.args.method).toBe("session/prompt");
    sidecar.answer(resent, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 4, result: { stopReason: "end_turn" } }) });
    expect((await again).status).toBe(200);
    const after = (await (await api(`/machines/${machine}/v1/sessions`)).json()) as { sessions: Session[] };
    expect(after.sessions[0]!.sandbox).toEqual({ origin: "session", requested: SESSIONS, rule: 2, ruleName: "people", effective });

    // A new server is a new decision: the rule as it is now.
    const fresh = api(`/machines/${machine}/v1/acp/s2?agent=mock`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
    });
    const freshInit = await sidecar.call("acp.post");
    expect(freshInit.args.sandbox).toEqual({ profile: "read-only", network: { mode: "none", allow: [] }, denyRead: [] });
    sidecar.answer(freshInit, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 5, result: { protocolVersion: 1 } }) });
    expect((await fresh).status).toBe(200);
    // A session loaded or resumed on it gets that server's sandbox too.
    const strict = { profile: "read-only", network: { mode: "none", allow: [] }, denyRead: [] };
    for (const [id, method] of [
      [6, "session/load"],
      [7, "session/resume"],
    ] as const) {
      const loading = api(`/machines/${machine}/v1/acp/s2`, {
        method: "POST",
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { sessionId: "acp-elsewhere", cwd: "/home/me/app", mcpServers: [] } }),
      });
      const load = await sidecar.call("acp.post");
      expect(load.args).toMatchObject({ method, sandbox: strict });
      sidecar.answer(load, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id, result: {} }) });
      expect((await loading).status).toBe(200);
    }
    await putPolicy(SESSIONS);
  });

  it("a task gets the default for unattended work, said on its record", async () => {
    const machine = "sandboxed-tasks";
    const sidecar = await connect(machine);
    await policyReached(machine);
    const starting = sidecar.call("acp.post"); // it starts as soon as it is submitted
    const created = await api("/v1/tasks", { method: "POST", body: JSON.stringify({ machine, agent: "mock", cwd: "/srv/app", prompt: "tidy up" }) });
    expect(created.status, await created.clone().text()).toBe(201);
    const task = (await created.json()) as Task;
    expect(task.origin).toBe("task");
    const init = await starting;
    expect(init.args).toMatchObject({ serverId: task.id, agent: "mock", method: "initialize", sandbox: TASK_DEFAULT });
    sidecar.fail(init, { code: "agent_process_exited", detail: "the agent could not start (a test)" });
    await expect.poll(async () => ((await (await api(`/v1/tasks/${task.id}`)).json()) as Task).state).toBe("failed");
  });

  it("a schedule's task and a GitHub trigger's task each get their origin's rule", async () => {
    const machine = "sandboxed-unattended";
    const sidecar = await connect(machine);
    await policyReached(machine);
    const task = { machine, agent: "mock", cwd: "/srv/app", prompt: "nightly" };
    const schedule = (await (await api("/v1/schedules", { method: "POST", body: JSON.stringify({ cron: "*/5 * * * *", task }) })).json()) as { id: string };
    await runInDurableObject(team(), (_, state) => {
      state.storage.sql.exec(`UPDATE schedules SET next_run_at = ? WHERE id = ?`, Date.now() - 1000, schedule.id);
    });
    const scheduledCall = sidecar.call("acp.post");
    expect(await runDurableObjectAlarm(team())).toBe(true);
    const scheduled = await scheduledCall;
    expect(scheduled.args).toMatchObject({ agent: "mock", sandbox: SCHEDULED });
    expect(((await (await api(`/v1/tasks/${scheduled.args.serverId}`)).json()) as Task).origin).toBe("schedule");
    sidecar.fail(scheduled, { code: "agent_process_exited", detail: "a test" });
    await expect.poll(async () => ((await (await api(`/v1/tasks/${scheduled.args.serverId}`)).json()) as Task).state).toBe("failed");

    const secret = "whsec-sandbox-0123456789";
    const trigger = (await (
      await api("/v1/triggers", {
        method: "POST",
        body: JSON.stringify({ kind: "github", secret, events: [{ on: "issues.labeled", label: "agent" }], task: { ...task, prompt: "Fix #{{number}}" } }),
      })
    ).json()) as { deliveryPath: string };
    const body = JSON.stringify({
      action: "labeled",
      label: { name: "agent" },
      issue: { number: 7, title: "t", body: "", html_url: "https://github.com/a/b/issues/7" },
      repository: { full_name: "a/b" },
      sender: { login: "ada" },
    });
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)));
    const triggeredCall = sidecar.call("acp.post");
    const delivered = await SELF.fetch(`https://runtime.test${trigger.deliveryPath}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "sandbox-1",
        "x-hub-signature-256": `sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`,
      },
      body,
    });
    expect(delivered.status).toBe(202);
    const triggered = await triggeredCall;
    expect(triggered.args).toMatchObject({ agent: "mock", sandbox: TRIGGERED });
    expect(((await (await api(`/v1/tasks/${triggered.args.serverId}`)).json()) as Task).origin).toBe("trigger");
    // It failed to start: it says so on its issue (the comment is answered here, not posted).
    const commenting = sidecar.call("gh.comment");
    sidecar.fail(triggered, { code: "agent_process_exited", detail: "a test" });
    sidecar.answer(await commenting, { posted: true, url: "https://github.com/a/b/issues/7#c", reason: null });
    await expect.poll(async () => ((await (await api(`/v1/tasks/${triggered.args.serverId}`)).json()) as Task).state).toBe("failed");
  });

  it("the policy tester says which sandbox an agent, a machine and an origin get, from the team's rules or a draft", async () => {
    const tried = async (body: unknown) => {
      const res = await api("/v1/config/policy/test", { method: "POST", body: JSON.stringify(body) });
      expect(res.status, await res.clone().text()).toBe(200);
      return ((await res.json()) as { sandbox: unknown }).sandbox;
    };
    const request = { agent: "mock", machine: "any", cwd: "/w" };
    expect(await tried({ request: { ...request, origin: "trigger" } })).toEqual({ origin: "trigger", requested: TRIGGERED, rule: 0, ruleName: "triggered" });
    expect(await tried({ request: { ...request, origin: "task" } })).toEqual({ origin: "task", requested: TASK_DEFAULT, rule: null, ruleName: null });
    expect(await tried({ request })).toMatchObject({ origin: "session", requested: SESSIONS, ruleName: "people" });
    const draft = { rules: [], sandbox: [{ match: { agents: ["claude"] }, profile: "workspace", network: { mode: "allowlist", allow: ["127.0.0.1:18555"] } }] };
    expect(await tried({ request: { ...request, agent: "claude", origin: "schedule" }, policy: draft })).toEqual({
      origin: "schedule",
      requested: { profile: "workspace", network: { mode: "allowlist", allow: ["127.0.0.1:18555", "api.anthropic.com"] }, denyRead: [] },
      rule: 0,
      ruleName: "sandbox rule 1",
    });
    const refused = await api("/v1/config/policy", {
      method: "PUT",
      body: JSON.stringify({ rules: [], sandbox: [{ profile: "full", network: { mode: "open", allow: ["x.com"] } }] }),
    });
    expect(refused.status).toBe(400);
  });

  it("a session's or a task's own policy cannot name a sandbox; the kept policy reads back with its sandbox rules, and one that does not read refuses the start", async () => {
    const machine = "sandboxed-refusals";
    const sidecar = await connect(machine);
    await policyReached(machine);
    const ownSandbox = { rules: [], sandbox: [{ profile: "full", network: { mode: "open" } }] };
    const task = await api("/v1/tasks", { method: "POST", body: JSON.stringify({ machine, agent: "mock", cwd: "/srv", prompt: "x", policy: ownSandbox }) });
    expect(task.status).toBe(400);

    const post = (body: unknown, query = "") => api(`/machines/${machine}/v1/acp/r1${query}`, { method: "POST", body: JSON.stringify(body) });
    const initializing = post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    const init = await sidecar.call("acp.post");
    sidecar.answer(init, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1 } }) });
    expect((await initializing).status).toBe(200);
    const own = await post({
      jsonrpc: "2.0",
      id: 2,
      method: "session/new",
      params: { cwd: "/w", mcpServers: [], _meta: { "agent-runtime/policy": ownSandbox } },
    });
    expect(own.status).toBe(400);
    expect(await own.text()).toContain("sandbox");

    // The gate holds what it read in memory: forgotten, as a restarted object would, it reads storage again.
    const stub = env.MACHINE.get(env.MACHINE.idFromName(machine));
    const forget = (instance: unknown) => {
      (instance as { parts: { sessions: { gate: { policy: unknown } } } }).parts.sessions.gate.policy = null;
    };
    // The policy as kept, sandbox rules and all, reads back from storage.
    await runInDurableObject(stub, forget);
    const reread = api(`/machines/${machine}/v1/acp/r3?agent=mock`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
    });
    const rereadInit = await sidecar.call("acp.post");
    expect(rereadInit.args.sandbox).toEqual(SESSIONS);
    sidecar.answer(rereadInit, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 4, result: { protocolVersion: 1 } }) });
    expect((await reread).status).toBe(200);

    // The policy this machine's object keeps no longer reads as one: nothing starts (never a default instead).
    await runInDurableObject(stub, (instance, state) => {
      state.storage.kv.put("policy", { version: 99, config: { rules: [], sandbox: [{ profile: "sideways" }] }, updatedAtMs: 1 });
      forget(instance);
    });
    const refused = await api(`/machines/${machine}/v1/acp/r2?agent=mock`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
    });
    expect(refused.status).toBe(500);
    expect(sidecar.received.filter((f) => f.t === "req" && f.op === "acp.post")).toHaveLength(2);
    // Put right again: a later fan-out to this machine reads what it keeps before replacing it.
    await runInDurableObject(stub, (instance, state) => {
      state.storage.kv.put("policy", { version: 0, config: { rules: [] }, updatedAtMs: null });
      forget(instance);
    });
  });

  it("a GitHub trigger's attempt group runs each attempt under the rule for triggers", async () => {
    const machine = "sandboxed-attempts";
    const sidecar = await connect(machine);
    await policyReached(machine);
    const secret = "whsec-attempts-0123456789";
    const created = await api("/v1/triggers", {
      method: "POST",
      body: JSON.stringify({
        kind: "github",
        secret,
        events: [{ on: "issues.labeled", label: "agent" }],
        task: { machine, agent: "mock", cwd: "/srv/app", prompt: "Fix #{{number}}" },
        attempts: { attempts: [{ agent: "mock" }, { agent: "mock" }] },
      }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const trigger = (await created.json()) as { deliveryPath: string };
    const body = JSON.stringify({
      action: "labeled",
      label: { name: "agent" },
      issue: { number: 9, title: "t", body: "", html_url: "https://github.com/a/b/issues/9" },
      repository: { full_name: "a/b" },
      sender: { login: "ada" },
    });
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)));
    const delivering = SELF.fetch(`https://runtime.test${trigger.deliveryPath}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "attempts-1",
        "x-hub-signature-256": `sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`,
      },
      body,
    });
    const base = await sidecar.call("attempts.base");
    const starts = [sidecar.call("acp.post"), sidecar.call("acp.post")];
    sidecar.answer(base, { repository: "/srv/app", branch: "main", commit: "a".repeat(40) });
    expect((await delivering).status).toBe(202);
    const started = await Promise.all(starts);
    for (const start of started) expect(start.args).toMatchObject({ agent: "mock", method: "initialize", sandbox: TRIGGERED });
    for (const start of started) expect(((await (await api(`/v1/tasks/${start.args.serverId}`)).json()) as Task).origin).toBe("trigger");
    // Both fail to start; the group ends and says so on its issue (answered here, not posted).
    const commenting = sidecar.call("gh.comment");
    for (const start of started) sidecar.fail(start, { code: "agent_process_exited", detail: "a test" });
    sidecar.answer(await commenting, { posted: true, url: "https://github.com/a/b/issues/9#c", reason: null });
  });
});
