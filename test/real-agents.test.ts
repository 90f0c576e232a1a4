/**
 * The real agents, installed from the npm registry through the API and driven through the relay to a
 * finished turn, offline: their model API is the fake server of test/fake-models.ts on 127.0.0.1. Each
 * turn streams text, asks a permission (answered by the client), and writes a file on disk. The versions
 * and paths the runtime reports are those of the processes that run.
 */
import { mkdir, mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AcpHttpClient } from "acp-http-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FILE_CONTENT, FINAL_TEXT, type FakeModels, startFakeModels, WRITE_PROMPT } from "./fake-models";
import { startRuntime, type Runtime } from "./harness";

/** Each agent: the version installed (pinned: the test checks it is the one that runs) and how it finds the fake. */
const AGENTS = [
  {
    id: "gemini",
    version: "0.61.0",
    env: (fake: FakeModels) => ({ GEMINI_API_KEY: "fake-gemini-key", GOOGLE_GEMINI_BASE_URL: fake.url }),
  },
] as const;

const INSTALL_TIMEOUT_MS = 5 * 60_000;
const TURN_TIMEOUT_MS = 120_000;

let rt: Runtime;
let fake: FakeModels;
let work: string;

beforeAll(async () => {
  fake = await startFakeModels();
  rt = await startRuntime({ machines: [] });
  const home = join(rt.dir, "home");
  work = await mkdtemp(join(tmpdir(), "agent-work-"));
  await mkdir(home, { recursive: true });
  await rt.addSidecar("local", Object.assign({ HOME: home }, ...AGENTS.map((a) => a.env(fake))));
}, 60_000);
afterAll(async () => {
  await rt?.dispose();
  await fake?.close();
});

describe.each(AGENTS)("$id", (agent) => {
  it(
    "installs from the registry, and reports the version and path of the binary it runs",
    async () => {
      const installed = await rt.api(`/v1/agents/${agent.id}/install`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agentVersion: agent.version }),
      });
      expect(installed.status, await installed.clone().text()).toBe(200);
      const info = (await (await rt.api(`/v1/agents/${agent.id}?config=true`)).json()) as {
        installed: boolean;
        credentialsAvailable: boolean;
        version: string | null;
        path: string | null;
        configError?: string | null;
      };
      expect(info).toMatchObject({ installed: true, credentialsAvailable: true, version: agent.version });
      expect(info.path).toContain(join("agents", agent.id));
    },
    INSTALL_TIMEOUT_MS,
  );

  it(
    "finishes a turn through the relay: streamed text, a permission answered, a file written",
    async () => {
      const file = join(work, `${agent.id}-hello.txt`);
      const said: string[] = [];
      const permissions: string[] = [];
      const client = new AcpHttpClient({
        baseUrl: rt.url,
        token: rt.token,
        transport: { path: `/v1/acp/real-${agent.id}`, bootstrapQuery: { agent: agent.id } },
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
        await client.initialize();
        const { sessionId } = await client.newSession({ cwd: work, mcpServers: [] });
        const { stopReason } = await client.prompt({ sessionId, prompt: [{ type: "text", text: WRITE_PROMPT(file) }] });
        expect(stopReason).toBe("end_turn");
        expect(permissions.length).toBeGreaterThan(0);
        expect(await readFile(file, "utf8")).toBe(FILE_CONTENT);
        expect(said.join("")).toContain(FINAL_TEXT);

        // The process that ran the turn is the binary the runtime reports.
        const reported = ((await (await rt.api(`/v1/agents/${agent.id}?config=true`)).json()) as { path: string }).path;
        const { processes } = (await (await rt.api("/v1/processes?owner=system")).json()) as {
          processes: { command: string; label?: string; status: string }[];
        };
        const running = processes.find((p) => p.label === `acp:real-${agent.id}` && p.status === "running");
        expect(running?.command).toBe(reported);
      } finally {
        await client.disconnect();
      }
    },
    TURN_TIMEOUT_MS,
  );
});
