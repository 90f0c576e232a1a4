/**
 * Agents: definitions, credentials, real installs from the npm registry, info with and without config.
 * The install test downloads @openai/codex and @agentclientprotocol/codex-acp at pinned versions (npm's
 * cache makes later runs fast).
 */
import { mkdir, readdir, readFile, realpath, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CAPABILITY_NAMES } from "@agent-runtime/protocol/agents";
import { openSession, rpc } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, type Runtime } from "./harness";

const CODEX_VERSION = "0.166.0";
const CODEX_ACP_VERSION = "2.6.0";

/** Credentials the tests must not inherit from whoever runs them. */
const NO_KEYS = Object.fromEntries(
  [
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENCODE_API_KEY",
    "AMP_API_KEY",
  ].map((k) => [k, ""]),
);

type Info = {
  id: string;
  installed: boolean;
  credentialsAvailable: boolean;
  capabilities: Record<string, boolean>;
  version?: string | null;
  path?: string | null;
  configError?: string | null;
  configOptions?: unknown[] | null;
  serverStatus?: { status: string };
};

let rt: Runtime;
let home: string;

beforeAll(async () => {
  rt = await startRuntime({ machines: [] });
  home = join(rt.dir, "home");
  await mkdir(home, { recursive: true });
  // The mock asks for a login its API key satisfies: every session here goes through the runtime's own login.
  await rt.addSidecar("local", { ...NO_KEYS, HOME: home, MOCK_AGENT_API_KEY: "mock-secret-key-0123456789", MOCK_AGENT_AUTH_VAR: "MOCK_AGENT_API_KEY" });
});
afterAll(async () => {
  await rt?.dispose();
});

async function info(agent: string, query = ""): Promise<Info> {
  const res = await rt.api(`/v1/agents/${agent}${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Info;
}

function install(agent: string, body: unknown): Promise<Response> {
  return rt.api(`/v1/agents/${agent}/install`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

describe("agent info", () => {
  it("lists every agent with all 18 capability flags", async () => {
    const res = await rt.api("/v1/agents");
    const { agents } = (await res.json()) as { agents: Info[] };
    expect(agents.map((a) => a.id)).toEqual(["claude", "codex", "gemini", "opencode", "pi", "amp", "mock", "mock-login"]);
    for (const agent of agents) expect(Object.keys(agent.capabilities).sort()).toEqual([...CAPABILITY_NAMES].sort());
    expect(agents.find((a) => a.id === "mock")).toMatchObject({ installed: true, credentialsAvailable: true });
    expect(agents.find((a) => a.id === "claude")).toMatchObject({ installed: false, credentialsAvailable: false });
  });

  it("answers 400 unsupported_agent for an unknown agent", async () => {
    const res = await rt.api("/v1/agents/gpt-17");
    expect(res.status).toBe(400);
    expect(errorCode(await problemOf(res))).toBe("unsupported_agent");
  });

  it("finds credentials in the agent's own files under HOME", async () => {
    expect((await info("claude")).credentialsAvailable).toBe(false);
    await mkdir(join(home, ".claude"), { recursive: true });
    await writeFile(join(home, ".claude", ".credentials.json"), "{}");
    expect((await info("claude")).credentialsAvailable).toBe(true);
  });

  it("finds credentials in the environment", async () => {
    const keyed = await startRuntime({ machines: [] });
    try {
      await keyed.addSidecar("local", { ...NO_KEYS, HOME: join(keyed.dir, "empty-home"), GEMINI_API_KEY: "k" });
      const { agents } = (await (await keyed.api("/v1/agents")).json()) as { agents: Info[] };
      expect(agents.find((a) => a.id === "gemini")?.credentialsAvailable).toBe(true);
      expect(agents.find((a) => a.id === "codex")?.credentialsAvailable).toBe(false);
    } finally {
      await keyed.dispose();
    }
  });

  it("with config=true reports the mock agent's version, path and config options (asked of the agent)", async () => {
    const mock = await info("mock", "?config=true");
    expect(mock.version).toBe("1.0.0");
    expect(mock.path).toMatch(/mock-agent\.js$/);
    expect(mock.configOptions).toEqual([]);
    expect(mock.configError).toBeNull();
    const plain = await info("mock");
    expect(plain.version).toBeUndefined();
    expect(plain.serverStatus).toEqual({ status: "stopped", uptimeMs: null, servers: 0 });
  });
});

describe("install validation", () => {
  it.each([
    ["a shell command in a version", { agentVersion: "1.0; rm -rf ~" }],
    ["an npm option as a version", { agentProcessVersion: "--registry=http://127.0.0.1:1" }],
    ["a URL as a version", { agentVersion: "https://example.invalid/x.tgz" }],
    ["a wrong type", { reinstall: "yes" }],
    ["an unknown field", { version: "1.0.0" }],
  ])("refuses %s with 400 before anything runs", async (_what, body) => {
    const res = await install("codex", body);
    expect(res.status).toBe(400);
    expect(errorCode(await problemOf(res))).toBe("invalid_request");
    const { processes } = (await (await rt.api("/v1/processes")).json()) as { processes: { label?: string; command: string }[] };
    expect(processes.filter((p) => p.label?.startsWith("install:") || p.command === "npm")).toEqual([]); // npm never ran
  });

  it("refuses a version the registry does not have before installing anything: nothing half-installed", { timeout: 60_000 }, async () => {
    const res = await install("codex", { agentProcessVersion: "99.99.99" });
    expect(res.status).toBe(400);
    const problem = await problemOf(res);
    expect(problem).toMatchObject({ package: "@agentclientprotocol/codex-acp", version: "99.99.99" });
    expect(problem.detail).toContain("no version of @agentclientprotocol/codex-acp matches '99.99.99'");
    // Nothing was downloaded: no package folder, no record.
    const agentDir = join(rt.dir, "data-local", "agents", "codex");
    const left = await readdir(agentDir).catch(() => [] as string[]);
    expect(left).toEqual([]);
    expect((await info("codex")).installed).toBe(false);
  });

  it("says why amp cannot be installed: 502 package_unavailable naming its packages, and configError", async () => {
    const res = await install("amp", {});
    expect(res.status).toBe(502);
    const problem = await problemOf(res);
    expect(errorCode(problem)).toBe("package_unavailable");
    expect(problem).toMatchObject({ packages: ["@ampcode/cli", "@superagenticai/acp-amp"] });
    expect(problem.detail).toContain("no ACP adapter");
    const amp = await info("amp");
    expect(amp.installed).toBe(false);
    expect(amp.configError).toContain("no ACP adapter");
    const { processes } = (await (await rt.api("/v1/processes")).json()) as { processes: { label?: string }[] };
    expect(processes.filter((p) => p.label === "install:amp")).toEqual([]); // npm never ran
  });

  it("says the built-in mock needs no install", async () => {
    const res = await install("mock", {});
    expect(await res.json()).toEqual({
      already_installed: true,
      artifacts: [{ kind: "agent_process", path: "builtin:mock", source: "builtin", version: "1.0.0" }],
    });
  });
});

describe("logging in from the environment", () => {
  it("authenticates a relay session and the config probe by itself when the agent offers an env_var login", async () => {
    // openSession never calls authenticate: the session exists only because the runtime logged in.
    const sessionId = await openSession(rt, "auto-login");
    expect(sessionId).toMatch(/^mock-[0-9a-f-]{36}$/);
    await rt.api("/v1/acp/auto-login", { method: "DELETE" });
    expect((await info("mock", "?config=true&no_cache=true")).configError).toBeNull();
  });
});

describe("an agent's errors", () => {
  it("carry the cause the agent wrote to its stderr, secrets removed", async () => {
    const sessionId = await openSession(rt, "failing");
    const res = await rpc(rt, "failing", { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "/fail" }] } });
    expect(res.status).toBe(200);
    const { error } = (await res.json()) as { error: { code: number; message: string; data: { agentStderr: string } } };
    expect(error.message).toMatch(/Internal error/);
    expect(error.data.agentStderr).toContain("cannot finish the turn: the model endpoint refused the key [redacted]");
    expect(error.data.agentStderr).not.toContain("mock-secret-key-0123456789");
    await rt.api("/v1/acp/failing", { method: "DELETE" });
  });
});

describe("a real install from the npm registry", () => {
  it("installs codex and its ACP adapter at pinned versions, idempotently, and launches it", { timeout: 240_000 }, async () => {
    const earlier = new Set(((await (await rt.api("/v1/processes")).json()) as { processes: { id: string }[] }).processes.map((p) => p.id));
    const first = await install("codex", { agentVersion: CODEX_VERSION, agentProcessVersion: CODEX_ACP_VERSION });
    expect(first.status).toBe(200);
    const result = (await first.json()) as { already_installed: boolean; artifacts: { kind: string; path: string; source: string; version: string }[] };
    expect(result.already_installed).toBe(false);
    expect(result.artifacts.map((a) => [a.kind, a.source, a.version])).toEqual([
      ["native_agent", "npm", CODEX_VERSION],
      ["agent_process", "npm", CODEX_ACP_VERSION],
    ]);
    for (const artifact of result.artifacts) expect((await stat(artifact.path)).isFile()).toBe(true);

    // Nothing new to do: already_installed, same paths.
    const again = (await (await install("codex", {})).json()) as typeof result;
    expect(again).toEqual({ ...result, already_installed: true });

    // Installs ran as tracked system processes.
    const { processes } = (await (await rt.api("/v1/processes")).json()) as {
      processes: { id: string; label?: string; owner: string; exitCode?: number | null }[];
    };
    const installs = processes.filter((p) => p.label === "install:codex" && !earlier.has(p.id));
    expect(installs.length).toBeGreaterThanOrEqual(2);
    expect(installs.every((p) => p.owner === "system" && p.exitCode === 0)).toBe(true);

    // Info: installed (the adapter's version, as the registry names it), and with config=true the binary
    // that runs the turns: the installed Codex, which codex-acp is pointed at (CODEX_PATH).
    const codex = await info("codex", "?config=true");
    expect(codex).toMatchObject({ installed: true, installedVersion: CODEX_ACP_VERSION, version: CODEX_VERSION, path: result.artifacts[0]!.path });
    expect(codex.configError).toMatch(/auth/i); // no key on this machine: the agent says so, as configError
    expect((await info("codex", "?config=true&no_cache=true")).version).toBe(CODEX_VERSION);

    // A failed install (a version that does not exist) leaves the previous one working.
    const broken = await install("codex", { agentProcessVersion: "0.0.1-does-not-exist" });
    expect(broken.status).toBe(400); // the registry has no such version: the request cannot be met
    expect(errorCode(await problemOf(broken))).toBe("invalid_request");
    expect((await info("codex")).installed).toBe(true);
    expect((await stat(result.artifacts[1]!.path)).isFile()).toBe(true);

    // Two reinstalls at once are serialized and both succeed.
    const [r1, r2] = await Promise.all([
      install("codex", { reinstall: true, agentVersion: CODEX_VERSION, agentProcessVersion: CODEX_ACP_VERSION }),
      install("codex", { reinstall: true, agentVersion: CODEX_VERSION, agentProcessVersion: CODEX_ACP_VERSION }),
    ]);
    expect([r1.status, r2.status]).toEqual([200, 200]);
    expect(((await r1.json()) as typeof result).already_installed).toBe(false);
    await r2.body?.cancel();
    expect((await stat(result.artifacts[1]!.path)).isFile()).toBe(true);

    // The relay launches the installed adapter; without a key the agent refuses clearly, no hang.
    const init = await rpc(
      rt,
      "codex-1",
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } },
      "?agent=codex",
    );
    expect(init.status).toBe(200);
    expect(((await init.json()) as { result: { agentInfo: { name: string } } }).result.agentInfo.name).toBe("@agentclientprotocol/codex-acp");
    const session = await rpc(rt, "codex-1", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } });
    expect(session.status).toBe(200);
    expect(((await session.json()) as { error?: { message: string } }).error?.message).toMatch(/auth/i);
    expect((await info("codex")).serverStatus?.status).toBe("running");
    await rt.api("/v1/acp/codex-1", { method: "DELETE" });

    // Installed but broken (here: its script throws at once): the agent process exited, and why is in the problem.
    const adapter = await realpath(result.artifacts[1]!.path);
    const script = await readFile(adapter);
    await writeFile(adapter, "#!/usr/bin/env node\nthrow new Error('broken on purpose');\n");
    try {
      const broken = await rpc(rt, "codex-2", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=codex");
      const problem = await problemOf(broken);
      expect(errorCode(problem)).toBe("agent_process_exited");
      expect(problem.stderr).toContain("broken on purpose");
    } finally {
      await writeFile(adapter, script);
    }
  });
});
