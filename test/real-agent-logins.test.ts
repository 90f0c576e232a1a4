/**
 * What real agents say of logins and usage (docs/architecture.md, "Logins" and "Usage"): Claude Code
 * (claude-agent-acp) and Codex (codex-acp), installed from the tests' registry as in
 * test/real-agents.test.ts (test/real-agent-kit.ts), against the fake model of test/fake-models.ts.
 * On a machine with their keys a turn's usage is what each adapter sends; on a machine without them (an
 * empty HOME, no API key) each shows the login methods it lists itself.
 */
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AcpHttpClient } from "acp-http-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModels, startFakeModels } from "./fake-models";
import { startRuntime, waitFor, type Runtime } from "./harness";
import { ensureNode } from "./node-releases";
import { AGENTS, INSTALL_TIMEOUT_MS, REGISTRY, TURN_TIMEOUT_MS } from "./real-agent-kit";
import { type RegistryServer, startRegistryServer } from "./registry-server";

const claude = AGENTS.find((a) => a.id === "claude-acp")!;
const codex = AGENTS.find((a) => a.id === "codex-acp")!;
const TESTED = [claude, codex];

let rt: Runtime;
let fake: FakeModels;
let registry: RegistryServer;
let work: string;

beforeAll(async () => {
  fake = await startFakeModels();
  registry = await startRegistryServer();
  registry.setAgents(REGISTRY.filter((a) => TESTED.some((t) => t.id === a.id)));
  rt = await startRuntime({ machines: [], sidecarNode: await ensureNode(24), vars: { ACP_REGISTRY_URL: registry.url } });
  work = await mkdtemp(join(tmpdir(), "agent-logins-work-"));
  const home = join(rt.dir, "home");
  await mkdir(home, { recursive: true });
  for (const agent of TESTED) {
    for (const [relative, text] of Object.entries(agent.files(fake))) {
      await mkdir(dirname(join(home, relative)), { recursive: true });
      await writeFile(join(home, relative), text);
    }
  }
  // Tests may run as root (containers): the machine's owner opts in for agents that refuse root by default.
  await rt.addSidecar("local", Object.assign({ HOME: home, AGENT_RUNTIME_ALLOW_ROOT_AGENTS: "1" }, ...TESTED.map((a) => a.env(fake))));
  // A machine where nobody logged them in: an empty HOME, no key (Claude Code still pointed at the fake, so nothing leaves).
  const bare = join(rt.dir, "bare-home");
  await mkdir(bare, { recursive: true });
  await rt.addSidecar("bare", {
    HOME: bare,
    AGENT_RUNTIME_ALLOW_ROOT_AGENTS: "1",
    ANTHROPIC_API_KEY: "",
    OPENAI_API_KEY: "",
    ANTHROPIC_BASE_URL: fake.url,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  });
}, 60_000);
afterAll(async () => {
  await rt?.dispose();
  await fake?.close();
  await registry?.close();
});

const post = (path: string, body: unknown) => rt.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function install(machine: string, agent: (typeof TESTED)[number]): Promise<void> {
  const installed = await post(`/machines/${machine}/v1/agents/${agent.id}/install`, agent.install);
  expect(installed.status, await installed.clone().text()).toBe(200);
}

type Usage = { inputTokens: number; outputTokens: number; cachedTokens: number; cost: { amount: number; currency: string } | null };
type Record = {
  id: string;
  sessionId: string;
  state: string;
  usage: (Usage & { turns: number; contextUsed: number | null; contextSize: number | null }) | null;
};

/** One turn through the relay that the fake model answers with words only; the session's record after it. */
async function turn(agent: (typeof TESTED)[number]): Promise<{ record: Record; stop: Usage }> {
  const client = new AcpHttpClient({
    baseUrl: rt.url,
    token: rt.token,
    transport: { path: `/v1/acp/usage-${agent.id}`, bootstrapQuery: { agent: agent.id } },
    client: { sessionUpdate: async () => {}, requestPermission: async (r) => ({ outcome: { outcome: "selected", optionId: r.options[0]!.optionId } }) },
  });
  try {
    await client.initialize();
    const { sessionId } = await client.newSession({ cwd: work, mcpServers: [] });
    expect((await client.prompt({ sessionId, prompt: [{ type: "text", text: "Say hello." }] })).stopReason).toBe("end_turn");
    return await waitFor(async () => {
      const { sessions } = (await (await rt.api("/v1/sessions?limit=200")).json()) as { sessions: Record[] };
      const record = sessions.find((s) => s.sessionId === sessionId);
      if (record?.state !== "idle" || !record.usage?.turns) return null;
      const { entries } = (await (await rt.api(`/v1/sessions/${record.id}/transcript`)).json()) as { entries: { kind: string; data?: { usage?: Usage } }[] };
      const stop = entries.find((e) => e.kind === "stop")?.data?.usage;
      return stop ? { record, stop } : null;
    }, "the turn's usage on its record");
  } finally {
    await client.disconnect();
  }
}

/** Opus 5.5, Claude Code 2.1.330's default model, at the price its adapter lists ($4 / $20 per million tokens in / out). */
const OPUS_USD_PER_TOKEN = { input: 4e-6, output: 20e-6 };

describe("usage the adapters report", () => {
  it(
    "Claude Code: the turn's tokens (its answer's usage), the context and the session's cost in USD (its usage_update), on the stop entry and the record",
    async () => {
      await install("local", claude);
      const before = fake.requests.length;
      const { record, stop } = await turn(claude);
      // Every model call costs the fake's 12 tokens in and 8 out: Claude Code prices each (the turn's call and
      // its title's, which may come after the turn's usage was reported), while its answer's tokens are the
      // turn's own call. So the cost is a whole number of calls, at least the turn's, at most all the fake saw.
      const calls = fake.requests.slice(before).filter((r) => r.method === "POST" && /^\/v1\/messages(\?|$)/.test(r.path)).length;
      expect(calls).toBeGreaterThan(0);
      expect(stop).toMatchObject({ inputTokens: 12, outputTokens: 8, cachedTokens: 0, cost: { currency: "USD" } });
      const priced = stop.cost!.amount / (12 * OPUS_USD_PER_TOKEN.input + 8 * OPUS_USD_PER_TOKEN.output);
      expect(priced).toBeCloseTo(Math.round(priced), 6);
      expect(Math.round(priced)).toBeGreaterThanOrEqual(1);
      expect(Math.round(priced)).toBeLessThanOrEqual(calls);
      expect(record.usage).toMatchObject({ ...stop, turns: 1, contextUsed: 20, contextSize: 1_000_000 });
    },
    INSTALL_TIMEOUT_MS + TURN_TIMEOUT_MS,
  );

  it(
    "Codex: the turn's tokens (its answer's usage) and the context (its usage_update), never a cost: codex-acp sends none",
    async () => {
      await install("local", codex);
      const { record, stop } = await turn(codex);
      expect(stop).toEqual({ inputTokens: 12, outputTokens: 8, cachedTokens: 0, cost: null });
      expect(record.usage).toMatchObject({ ...stop, turns: 1, contextUsed: 20, contextSize: 258_400 });
    },
    INSTALL_TIMEOUT_MS + TURN_TIMEOUT_MS,
  );
});

describe("without their credentials (an empty HOME, no API key)", () => {
  const rpc = async (serverId: string, message: unknown, query = "") => {
    const res = await rt.api(`/machines/bare/v1/acp/${serverId}${query}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(message),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as { result?: { sessionId: string }; error?: { code: number; data?: { [key: string]: unknown } } };
  };
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: { auth: { terminal: true } } } };
  const loginOf = async (agent: string) =>
    (await (await rt.api(`/machines/bare/v1/agents/${agent}/login?no_cache=true`)).json()) as { state: string; methods: { id: string; type: string }[] };

  it(
    "Codex refuses session/new (auth_required): the session is needs_login with codex-acp's own methods",
    async () => {
      await install("bare", codex);
      // codex-acp offers an API key and ChatGPT as its own flows (no `type`: ACP's agent methods).
      const methods = [
        { id: "api-key", type: "agent", name: "API Key" },
        { id: "chat-gpt", type: "agent", name: "ChatGPT" },
      ];
      expect(await loginOf(codex.id)).toMatchObject({ state: "needs_login", methods });
      await rpc("bare-codex", init, `?agent=${codex.id}`);
      const refused = await rpc("bare-codex", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: work, mcpServers: [] } });
      expect(refused.error?.code).toBe(-32000);
      const id = String(refused.error?.data?.["agent-runtime/session"]);
      const record = (await (await rt.api(`/v1/sessions/${id}`)).json()) as { state: string; waiting: unknown; login: { methods: unknown[] } };
      expect(record).toMatchObject({ state: "needs_login", waiting: { kind: "login" }, login: { methods } });
    },
    INSTALL_TIMEOUT_MS + TURN_TIMEOUT_MS,
  );

  it(
    "Claude Code starts the session (claude-agent-acp refuses only at the turn) and refuses the prompt (auth_required): the session is needs_login with its own terminal logins",
    async () => {
      await install("bare", claude);
      const methods = [
        { id: "claude-ai-login", type: "terminal", name: "Claude Subscription" },
        { id: "console-login", type: "terminal", name: "Anthropic Console" },
      ];
      // Asked, it looks logged in: its session/new succeeds without a key.
      expect(await loginOf(claude.id)).toMatchObject({ state: "logged_in", methods });
      await rpc("bare-claude", init, `?agent=${claude.id}`);
      const created = await rpc("bare-claude", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: work, mcpServers: [] } });
      expect(created.result?.sessionId).toBeTruthy();
      const prompted = await rpc("bare-claude", {
        jsonrpc: "2.0",
        id: 3,
        method: "session/prompt",
        params: { sessionId: created.result!.sessionId, prompt: [{ type: "text", text: "Say hello." }] },
      });
      expect(prompted.error?.code).toBe(-32000);
      const { sessions } = (await (await rt.api("/machines/bare/v1/sessions?limit=200")).json()) as {
        sessions: { sessionId: string; state: string; waiting: unknown; login: { methods: unknown[] } | null }[];
      };
      expect(sessions.find((r) => r.sessionId === created.result!.sessionId)).toMatchObject({
        state: "needs_login",
        waiting: { kind: "login" },
        login: { methods },
      });
      // What the turn said is kept over what asking says (until a login, or a session that starts, says otherwise).
      expect((await (await rt.api(`/machines/bare/v1/agents/${claude.id}/login`)).json()) as unknown).toMatchObject({ state: "needs_login" });
    },
    INSTALL_TIMEOUT_MS + TURN_TIMEOUT_MS,
  );
});
