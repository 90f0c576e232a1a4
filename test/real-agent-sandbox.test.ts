/**
 * A real agent inside the sandbox (docs/architecture.md, "Sandboxes"): Claude Code, installed from the
 * tests' registry as in test/real-agents.test.ts, on a sidecar whose owner set `--sandbox workspace` and
 * `--allow-network 127.0.0.1:<the fake model's port>`. Through the relay it finishes a turn (its model
 * reached through the egress proxy, a file written in its folder, its own state in ~/.claude kept), and
 * when the model asks its `Read` tool for a planted `~/.ssh/id_ed25519` the read fails inside the
 * sandbox: the key reaches neither the model nor the transcript.
 */
import { mkdir, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AcpHttpClient } from "acp-http-client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FILE_CONTENT, FINAL_TEXT, type FakeModels, READ_FINAL_TEXT, READ_PROMPT, startFakeModels, WRITE_PROMPT } from "./fake-models";
import { startRuntime, waitFor, type Runtime } from "./harness";
import { ensureNode } from "./node-releases";
import { AGENTS, INSTALL_TIMEOUT_MS, REGISTRY, TURN_TIMEOUT_MS } from "./real-agent-kit";
import { type RegistryServer, startRegistryServer } from "./registry-server";

const SECRET = "PLANTED-SSH-KEY-7f3a9c";
const claude = AGENTS.find((a) => a.id === "claude-acp")!;

let rt: Runtime;
let fake: FakeModels;
let registry: RegistryServer;
let home: string;
let work: string;

beforeAll(async () => {
  fake = await startFakeModels();
  registry = await startRegistryServer();
  registry.setAgents(REGISTRY.filter((a) => a.id === claude.id));
  rt = await startRuntime({ machines: [], sidecarNode: await ensureNode(24), vars: { ACP_REGISTRY_URL: registry.url } });
  home = join(rt.dir, "home");
  work = await mkdtemp(join(tmpdir(), "agent-sandbox-work-"));
  await mkdir(join(home, ".ssh"), { recursive: true });
  await writeFile(join(home, ".ssh", "id_ed25519"), `-----BEGIN OPENSSH PRIVATE KEY-----\n${SECRET}\n-----END OPENSSH PRIVATE KEY-----\n`);
  for (const [relative, text] of Object.entries(claude.files())) {
    await mkdir(dirname(join(home, relative)), { recursive: true });
    await writeFile(join(home, relative), text);
  }
  const port = new URL(fake.url).port;
  await rt.addSidecar("local", {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    // Tests may run as root (containers): the machine's owner opts in for agents that refuse root by default.
    AGENT_RUNTIME_ALLOW_ROOT_AGENTS: "1",
    AGENT_RUNTIME_SANDBOX: "workspace",
    AGENT_RUNTIME_ALLOW_NETWORK: `127.0.0.1:${port}`,
    ...claude.env(fake),
  });
}, 60_000);

afterAll(async () => {
  await rt?.dispose();
  await fake?.close();
  await registry?.close();
});

it(
  "Claude Code under an owner's workspace floor finishes a turn, and cannot read a planted ~/.ssh key its model asks for",
  async () => {
    const installed = await rt.api(`/v1/agents/${claude.id}/install`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(claude.install),
    });
    expect(installed.status, await installed.clone().text()).toBe(200);

    const said: string[] = [];
    const permissions: string[] = [];
    // No file system offered by the client: Claude Code reads with its own process, inside the sandbox.
    const client = new AcpHttpClient({
      baseUrl: rt.url,
      token: rt.token,
      transport: { path: "/v1/acp/sandboxed-claude", bootstrapQuery: { agent: claude.id } },
      client: {
        sessionUpdate: async (n) => {
          if (n.update.sessionUpdate === "agent_message_chunk" && n.update.content.type === "text") said.push(n.update.content.text);
        },
        requestPermission: async (request) => {
          permissions.push(request.toolCall.title ?? request.toolCall.toolCallId);
          const allow = request.options.find((o) => o.kind === "allow_once") ?? request.options[0]!;
          return { outcome: { outcome: "selected", optionId: allow.optionId } };
        },
      },
    });
    try {
      await client.initialize({ protocolVersion: 1, clientCapabilities: {} });
      const { sessionId } = await client.newSession({ cwd: work, mcpServers: [] });

      // A turn: the model reached through the egress proxy, a file written in the session's folder.
      const file = join(work, "inside-the-sandbox.txt");
      const first = await client.prompt({ sessionId, prompt: [{ type: "text", text: WRITE_PROMPT(file) }] });
      expect(first.stopReason).toBe("end_turn");
      expect(said.join("")).toContain(FINAL_TEXT);
      expect(await readFile(file, "utf8")).toBe(FILE_CONTENT);

      // The model asks Claude Code's Read for the key: the read fails inside the sandbox.
      const key = join(home, ".ssh", "id_ed25519");
      const before = fake.requests.length;
      const second = await client.prompt({ sessionId, prompt: [{ type: "text", text: READ_PROMPT(key) }] });
      expect(second.stopReason).toBe("end_turn");
      expect(said.join("")).toContain(READ_FINAL_TEXT);
      const asked = fake.requests.slice(before).map((r) => JSON.stringify(r.body));
      const results = asked.flatMap((body) => body.match(/"type":"tool_result"[^}]*}/g) ?? []);
      expect(results.length, asked.join("\n")).toBeGreaterThan(0);
      expect(results.join("\n")).toMatch(/EACCES|permission denied/i);
      expect(results.join("\n")).toContain('"is_error":true');
      for (const body of fake.requests.map((r) => JSON.stringify(r.body))) expect(body).not.toContain(SECRET);
      // Outside the sandbox the key is still there: it was the sandbox that refused.
      expect(await readFile(key, "utf8")).toContain(SECRET);

      // The session's record and transcript: the owner's floor in force, and no key in what was said.
      const list = (await (await rt.api("/v1/sessions?limit=50")).json()) as { sessions: { id: string; sessionId: string }[] };
      const id = list.sessions.find((s) => s.sessionId === sessionId)!.id;
      const record = (await (await rt.api(`/v1/sessions/${id}`)).json()) as { sandbox: Record<string, unknown> | null };
      expect(record.sandbox).toMatchObject({
        origin: "session",
        effective: { profile: "workspace", network: { mode: "allowlist", allow: [`127.0.0.1:${new URL(fake.url).port}`] } },
      });
      const transcript = await waitFor(async () => {
        const text = await (await rt.api(`/v1/sessions/${id}/transcript?limit=1000`)).text();
        return text.includes(READ_FINAL_TEXT) && text;
      }, "the second turn in the transcript");
      expect(transcript).not.toContain(SECRET);
      const entries = (JSON.parse(transcript) as { entries: { kind: string; data?: { kind?: string; status?: string } }[] }).entries;
      expect(entries.filter((e) => e.kind === "tool_call" && e.data?.kind === "read").map((e) => e.data?.status)).toEqual(["failed"]);

      // Its own state stayed writable: Claude Code kept the session in ~/.claude/projects (what loading it again needs).
      const kept = await readdir(join(home, ".claude", "projects"), { recursive: true });
      expect(
        kept.some((path) => path.endsWith(`${sessionId}.jsonl`)),
        kept.join("\n"),
      ).toBe(true);
    } finally {
      await client.disconnect();
    }
  },
  INSTALL_TIMEOUT_MS + 2 * TURN_TIMEOUT_MS,
);
