/**
 * Questions agents ask and what turns cost (docs/architecture.md, "Sessions", "Usage"), with the mock: an
 * elicitation form answered through the API reaches the agent with its values, a declined one as
 * declined, a URL one shows its link; usage is kept per turn, summed on the record, and grouped by
 * /v1/usage; titles the agent gives replace the prompt's; a purge asks the agent to delete the session.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

type Pending = {
  requestId: string | number;
  kind: string;
  title: string;
  elicitation?: { mode: string; url?: string; fields?: { name: string; type: string; required: boolean }[] };
};
type Usage = {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  turns: number;
  cost: { amount: number; currency: string } | null;
  contextUsed: number | null;
  contextSize: number | null;
};
type Session = {
  id: string;
  sessionId: string;
  title: string | null;
  state: string;
  pending: Pending | null;
  waiting?: { kind: string } | null;
  usage?: Usage | null;
};
type Entry = { seq: number; kind: string; text?: string; data?: Record<string, unknown> };

async function json<T>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return JSON.parse(text) as T;
}

const post = (rt: Runtime, path: string, body: unknown) =>
  rt.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** A mock session, its record's id. */
async function open(rt: Runtime, serverId: string): Promise<Session> {
  await json(rpc(rt, serverId, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock"));
  const { result } = await json<{ result: { sessionId: string } }>(
    rpc(rt, serverId, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } }),
  );
  const { sessions } = await json<{ sessions: Session[] }>(rt.api("/v1/sessions?machine=local"));
  return sessions.find((s) => s.sessionId === result.sessionId)!;
}

const record = (rt: Runtime, id: string) => json<Session>(rt.api(`/v1/sessions/${id}`));
const entries = async (rt: Runtime, id: string) => (await json<{ entries: Entry[] }>(rt.api(`/v1/sessions/${id}/transcript`))).entries;
const say = (rt: Runtime, id: string, text: string) => json(post(rt, `/v1/sessions/${id}/prompt`, { prompt: [{ type: "text", text }] }), 202);

async function idleAfter(rt: Runtime, id: string, turns: number): Promise<Entry[]> {
  return waitFor(async () => {
    const [r, e] = [await record(rt, id), await entries(rt, id)];
    return r.state === "idle" && e.filter((x) => x.kind === "stop").length === turns ? e : null;
  }, `turn ${turns} to end`);
}

const lastText = (list: Entry[]) => list.filter((e) => e.kind === "text").at(-1)?.text;

describe("questions", () => {
  it("an elicitation form waits for a person, answered through the API (accepted with values, then declined); a URL one shows its link", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const s = await open(rt, "ask");
    await say(rt, s.id, "/elicit form");
    const waiting = await waitFor(async () => {
      const r = await record(rt!, s.id);
      return r.state === "waiting" ? r : null;
    }, "the question");
    expect(waiting.waiting).toEqual({ kind: "elicitation" });
    expect(waiting.pending).toMatchObject({
      kind: "elicitation",
      title: "What is your name?",
      elicitation: { mode: "form", fields: [{ name: "name", type: "string", required: true }] },
    });
    // A permission's answer does not answer a question, nor a question's a permission.
    expect((await post(rt, `/v1/sessions/${s.id}/permission`, { requestId: waiting.pending!.requestId, optionId: "allow" })).status).toBe(400);
    const answered = await json<Session>(post(rt, `/v1/sessions/${s.id}/elicitation`, { action: "accept", content: { name: "Ada" } }));
    expect(answered.pending).toBeNull();
    let list = await idleAfter(rt, s.id, 1);
    expect(lastText(list)).toBe("Hello, Ada");
    expect(list.find((e) => e.kind === "elicitation")?.data).toMatchObject({ kind: "elicitation", title: "What is your name?" });
    // What was answered, never the values.
    const answer = list.find((e) => e.kind === "elicitation_answer")!;
    expect(answer.data).toMatchObject({ action: "accept", fields: ["name"] });
    expect(JSON.stringify(answer)).not.toContain("Ada");

    await say(rt, s.id, "/elicit form");
    await waitFor(async () => (await record(rt!, s.id)).state === "waiting", "the second question");
    await json(post(rt, `/v1/sessions/${s.id}/elicitation`, { action: "decline" }));
    list = await idleAfter(rt, s.id, 2);
    expect(lastText(list)).toBe("declined");
    expect((await post(rt, `/v1/sessions/${s.id}/elicitation`, { action: "cancel" })).status).toBe(409);

    await say(rt, s.id, "/elicit url");
    const url = await waitFor(async () => {
      const r = await record(rt!, s.id);
      return r.state === "waiting" ? r.pending : null;
    }, "the URL question");
    expect(url.elicitation).toMatchObject({ mode: "url", url: "https://example.com/mock-agent/authorize" });
    await json(post(rt, `/v1/sessions/${s.id}/elicitation`, { action: "cancel" }));
    expect(lastText(await idleAfter(rt, s.id, 3))).toBe("cancelled");
  });
  it("cancels a question nobody answered by the team's deadline: the transcript and the audit say so, the session waits no more", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const tooShort = await rt.api("/v1/config/policy", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rules: [], questions: { timeoutSeconds: 4 } }),
    });
    expect(tooShort.status).toBe(400);
    const put = await rt.api("/v1/config/policy", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rules: [], questions: { timeoutSeconds: 5 } }),
    });
    expect(put.status, await put.clone().text()).toBe(200);
    const etag = put.headers.get("etag");
    await waitFor(async () => {
      const body = await json<{ machines: { machine: string; version: string | null }[] }>(rt!.api("/v1/config/policy/status"));
      return body.machines.some((m) => m.machine === "local" && m.version === etag);
    }, "the machine's object to hold the policy");

    const s = await open(rt, "late");
    await say(rt, s.id, "/elicit form");
    const waiting = await waitFor(async () => {
      const r = await record(rt!, s.id);
      return r.state === "waiting" ? r : null;
    }, "the question");
    const pending = waiting.pending as Pending & { atMs: number; deadline?: { atMs: number; onTimeout: string; rule: string } };
    expect(pending.deadline).toEqual({ atMs: pending.atMs + 5000, onTimeout: "cancel", rule: "the team's policy, questions" });
    // Nobody answers: the agent hears `cancel` and says so.
    const list = await idleAfter(rt, s.id, 1);
    expect(lastText(list)).toBe("cancelled");
    expect((await record(rt, s.id)).pending).toBeNull();
    expect(list.find((e) => e.kind === "elicitation_answer")?.data).toMatchObject({ action: "cancel" });
    expect(list.some((e) => e.kind === "notice" && e.text === "nobody answered in time: cancel (the team's policy, questions)")).toBe(true);
    const audit = await waitFor(async () => {
      const page = await json<{ entries: { method: string; route: string; status: number }[] }>(rt!.api("/v1/audit?limit=100"));
      return page.entries.find((e) => e.method === "POLICY") ?? null;
    }, "the policy's audit line");
    expect(audit).toMatchObject({ status: 408, route: `policy: cancel after nobody answered in time in session ${s.id} (the team's policy, questions)` });
    // Too late to answer it now.
    expect((await post(rt, `/v1/sessions/${s.id}/elicitation`, { action: "accept", content: { name: "Ada" } })).status).toBe(409);
  });
});

describe("usage", () => {
  it("keeps each turn's usage in its stop entry, sums it on the record, and /v1/usage groups it", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const s = await open(rt, "bill");
    await say(rt, s.id, "hello");
    let list = await idleAfter(rt, s.id, 1);
    // "hello" (5 characters) in, "You said: hello" (15) out, at $0.000001 a token.
    expect(list.find((e) => e.kind === "stop")!.data).toMatchObject({
      usage: { inputTokens: 5, outputTokens: 15, cachedTokens: 0, cost: { amount: 0.00002, currency: "USD" } },
    });
    await say(rt, s.id, "/title Paying the bills");
    list = await idleAfter(rt, s.id, 2);
    const r = await record(rt, s.id);
    expect(r.title).toBe("Paying the bills");
    // 20 tokens, then 23 in and 6 ("Titled") out.
    expect(r.usage).toMatchObject({
      inputTokens: 28,
      outputTokens: 21,
      turns: 2,
      contextUsed: 49,
      contextSize: 200_000,
      cost: { amount: 0.000049, currency: "USD" },
    });
    const other = await open(rt, "bill-2");
    await say(rt, other.id, "hi");
    await idleAfter(rt, other.id, 1);

    const today = new Date().toISOString().slice(0, 10);
    const byAgent = await json<{
      groups: { key: string; inputTokens: number; outputTokens: number; turns: number; sessions: number; costs: { amount: number; currency: string }[] }[];
    }>(rt.api(`/v1/usage?groupBy=agent&from=${today}&to=${today}`));
    // "hi": 2 in, "You said: hi" 12 out.
    expect(byAgent.groups).toEqual([
      { key: "mock", inputTokens: 30, outputTokens: 33, cachedTokens: 0, turns: 3, sessions: 2, costs: [{ amount: 0.000063, currency: "USD" }] },
    ]);
    const byDay = await json<{ groups: { key: string }[] }>(rt.api("/v1/usage?groupBy=day"));
    expect(byDay.groups.map((g) => g.key)).toEqual([today]);
    const none = await json<{ groups: unknown[] }>(rt.api("/v1/usage?from=2020-01-01&to=2020-01-31"));
    expect(none.groups).toEqual([]);
    expect((await rt.api("/v1/usage?from=2026-02-30")).status).toBe(400);
  });

  it("cancels a task whose reported cost passes its maxCostUsd, saying why; one within it succeeds", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const task = (body: Record<string, unknown>) =>
      json<{ id: string }>(post(rt!, "/v1/tasks", { machine: "local", agent: "mock", cwd: rt!.dir, ...body }), 201);
    type Task = { state: string; result: { error: string | null } | null };
    const ended = (id: string) =>
      waitFor(async () => {
        const t = await json<Task>(rt!.api(`/v1/tasks/${id}`));
        return ["succeeded", "failed", "cancelled", "timed_out"].includes(t.state) ? t : null;
      }, `task ${id} to end`);
    // "/slow 3 200" (11 characters) answers "tick 1 tick 2 tick 3 " (21): $0.000032 in all, reported at the turn's end.
    const over = await task({ prompt: "/slow 3 200", maxCostUsd: 0.00001 });
    expect(await ended(over.id)).toMatchObject({ state: "cancelled", result: { error: expect.stringContaining("passed its maxCostUsd ($0.00001)") } });
    const within = await task({ prompt: "/slow 3 200", maxCostUsd: 0.01 });
    expect(await ended(within.id)).toMatchObject({ state: "succeeded" });
    expect((await post(rt, "/v1/tasks", { machine: "local", agent: "mock", cwd: rt.dir, prompt: "x", maxCostUsd: -1 })).status).toBe(400);
  });

  it("a purge asks the agent to delete the session (session/delete), where it can", async () => {
    rt = await startRuntime({ machines: ["local"] });
    const s = await open(rt, "forget");
    await say(rt, s.id, "remember me");
    await idleAfter(rt, s.id, 1);
    const file = join(rt.dir, "data-local", "mock-agent", "sessions", `${s.sessionId}.json`);
    expect(existsSync(file)).toBe(true);
    await json(rt.api(`/v1/sessions/${s.id}?purge=true`, { method: "DELETE" }));
    expect(existsSync(file)).toBe(false);
  });
});
