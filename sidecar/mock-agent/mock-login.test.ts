/**
 * The mock agents' logins, questions and bill, spoken to by the ACP SDK's own client over stdio (the
 * built sidecar/dist/mock-agent.js, as the sidecar runs it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { type ClientContext, client, methods, ndJsonStream, PROTOCOL_VERSION, type SessionNotification } from "@agentclientprotocol/sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const MOCK = fileURLToPath(new URL("../dist/mock-agent.js", import.meta.url));
let home: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "mock-login-"));
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill();
  await rm(home, { recursive: true, force: true });
});

function start(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [MOCK, ...args], {
    env: { ...process.env, MOCK_AGENT_HOME: home, MOCK_AGENT_STATE_DIR: join(home, "sessions"), ...env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  return child;
}

/** Run `fn` with a connection to a mock started with `args`; updates and questions are gathered. */
async function withMock<T>(
  args: string[],
  env: Record<string, string>,
  answer: (params: unknown) => unknown,
  fn: (agent: ClientContext, updates: SessionNotification[]) => Promise<T>,
): Promise<T> {
  const child = start(args, env);
  const updates: SessionNotification[] = [];
  const stream = ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
  const app = client({ name: "test" })
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(methods.client.elicitation.create, ({ params }) => answer(params) as never);
  return app.connectWith(stream, (agent) => fn(agent, updates));
}

const initialize = { protocolVersion: PROTOCOL_VERSION, clientCapabilities: { auth: { terminal: true }, elicitation: { form: {}, url: {} } } };

describe("mock-login", () => {
  it("refuses session/new with auth_required and offers a terminal and an env_var method, and logout", async () => {
    await withMock(
      ["--require-login"],
      {},
      () => ({ action: "cancel" }),
      async (agent) => {
        const init = await agent.request(methods.agent.initialize, initialize);
        expect(init).toMatchObject({
          authMethods: [
            { type: "terminal", id: "mock-terminal", args: ["login"] },
            { type: "env_var", id: "mock-key", vars: [{ name: "MOCK_AGENT_KEY" }] },
            { id: "mock-browser", name: "Log in in a browser" },
          ],
          agentCapabilities: { auth: { logout: {} } },
        });
        await expect(agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject({ code: -32000 });
      },
    );
  });

  it("logs in by its own flow when the page it asks to open (a URL question scoped to authenticate) is accepted; declined, it refuses", async () => {
    const asked: unknown[] = [];
    await withMock(
      ["--require-login"],
      {},
      (params) => {
        asked.push(params);
        return { action: asked.length === 1 ? "decline" : "accept" };
      },
      async (agent) => {
        await agent.request(methods.agent.initialize, initialize);
        await expect(agent.request(methods.agent.authenticate, { methodId: "mock-browser" })).rejects.toThrow();
        expect(existsSync(join(home, "credentials.json"))).toBe(false);
        await agent.request(methods.agent.authenticate, { methodId: "mock-browser" });
        const { sessionId } = await agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] });
        expect(sessionId).toMatch(/^mock-/);
      },
    );
    expect(asked).toHaveLength(2);
    expect(asked[0]).toMatchObject({ mode: "url", url: "https://example.com/mock-agent/device", requestId: expect.anything() });
    expect(existsSync(join(home, "credentials.json"))).toBe(true);
  });

  it("logs in with MOCK_AGENT_KEY for that process only", async () => {
    await withMock(
      ["--require-login"],
      { MOCK_AGENT_KEY: "k-123" },
      () => ({ action: "cancel" }),
      async (agent) => {
        await agent.request(methods.agent.initialize, initialize);
        await expect(agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject({ code: -32000 });
        await agent.request(methods.agent.authenticate, { methodId: "mock-key" });
        const { sessionId } = await agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] });
        expect(sessionId).toMatch(/^mock-/);
      },
    );
    expect(existsSync(join(home, "credentials.json"))).toBe(false);
  });

  it("logs in through its terminal login (the code typed back), and logout forgets it", async () => {
    const login = start(["--require-login", "login"]);
    let out = "";
    const code = await new Promise<string>((resolve) =>
      login.stdout!.on("data", (d: Buffer) => {
        out += String(d);
        const match = /code: (\d{6})/.exec(out);
        if (match) resolve(match[1]!);
      }),
    );
    login.stdin!.write("000000x\n");
    login.stdin!.write(`${code}\n`);
    const exit = await new Promise<number | null>((resolve) => login.once("exit", resolve));
    expect(exit).toBe(0);
    expect(out).toContain("That is not the code");
    await withMock(
      ["--require-login"],
      {},
      () => ({ action: "cancel" }),
      async (agent) => {
        await agent.request(methods.agent.initialize, initialize);
        await agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] });
        await agent.request(methods.agent.logout, {});
        await expect(agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] })).rejects.toMatchObject({ code: -32000 });
      },
    );
  });
});

describe("the mock's questions and usage", () => {
  it("asks /elicit form and says hello with the answer, declined when declined; reports usage after every turn", async () => {
    const answers = [{ action: "accept", content: { name: "Ada" } }, { action: "decline" }];
    const asked: unknown[] = [];
    await withMock(
      [],
      {},
      (params) => {
        asked.push(params);
        return answers.shift();
      },
      async (agent, updates) => {
        await agent.request(methods.agent.initialize, initialize);
        const { sessionId } = await agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] });
        const said = () =>
          updates.map((u) => (u.update.sessionUpdate === "agent_message_chunk" && u.update.content.type === "text" ? u.update.content.text : "")).join("");
        const first = await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "/elicit form" }] });
        expect(said()).toBe("Hello, Ada");
        expect(asked[0]).toMatchObject({ mode: "form", requestedSchema: { properties: { name: { type: "string" } } } });
        // 12 characters asked, 10 said.
        expect(first).toMatchObject({ stopReason: "end_turn", usage: { inputTokens: 12, outputTokens: 10, totalTokens: 22 } });
        updates.length = 0;
        await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "/elicit form" }] });
        expect(said()).toBe("declined");
        const usage = updates.map((u) => u.update).filter((u) => u.sessionUpdate === "usage_update");
        // 22 tokens, then 12 + 8 more: the session's cost so far, at $0.000001 a token.
        expect(usage).toEqual([expect.objectContaining({ used: 42, size: 200_000, cost: { amount: 0.000042, currency: "USD" } })]);
        const chunk = updates.find((u) => u.update.sessionUpdate === "agent_message_chunk");
        expect(chunk?.update).toMatchObject({ messageId: expect.stringMatching(/^msg-/) });
      },
    );
  });

  it("asks /elicit url with a link", async () => {
    const asked: unknown[] = [];
    await withMock(
      [],
      {},
      (params) => {
        asked.push(params);
        return { action: "accept" };
      },
      async (agent) => {
        await agent.request(methods.agent.initialize, initialize);
        const { sessionId } = await agent.request(methods.agent.session.new, { cwd: home, mcpServers: [] });
        await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "/elicit url" }] });
        expect(asked[0]).toMatchObject({ mode: "url", url: expect.stringMatching(/^https:\/\//), elicitationId: expect.any(String) });
      },
    );
  });
});
