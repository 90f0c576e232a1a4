/**
 * Real agents as attempts of one group (docs/architecture.md, "Attempt groups"): Claude Code and Codex,
 * installed from the tests' registry as in test/real-agents.test.ts and pointed at the fake model server
 * of test/fake-models.ts, each in its own worktree on its own branch of one repository on one machine,
 * sandboxed as tasks are (`workspace`, their model reached through the egress proxy), their permission
 * requests answered by the group's policy. Each writes the file it is asked for; the compare view shows
 * both changes (files changed, cost, the check's verdict) and the diff of each against the base and of
 * the two against each other.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FILE_CONTENT, type FakeModels, startFakeModels, WRITE_PROMPT } from "./fake-models";
import { startRuntime, waitFor, type Runtime } from "./harness";
import { ensureNode } from "./node-releases";
import { AGENTS, INSTALL_TIMEOUT_MS, REGISTRY, TURN_TIMEOUT_MS } from "./real-agent-kit";
import { type RegistryServer, startRegistryServer } from "./registry-server";

const racing = AGENTS.filter((a) => a.id === "claude-acp" || a.id === "codex-acp");

let rt: Runtime;
let fake: FakeModels;
let registry: RegistryServer;
let repo: string;
const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });

beforeAll(async () => {
  fake = await startFakeModels();
  registry = await startRegistryServer();
  registry.setAgents(REGISTRY.filter((r) => racing.some((a) => a.id === r.id)));
  rt = await startRuntime({ machines: [], sidecarNode: await ensureNode(24), vars: { ACP_REGISTRY_URL: registry.url } });
  const home = join(rt.dir, "home");
  await mkdir(home, { recursive: true });
  for (const agent of racing)
    for (const [relative, text] of Object.entries("files" in agent ? agent.files(fake) : {})) {
      await mkdir(dirname(join(home, relative)), { recursive: true });
      await writeFile(join(home, relative), text);
    }
  // Tests may run as root (containers): the machine's owner opts in for agents that refuse root by default.
  await rt.addSidecar("local", Object.assign({ HOME: home, AGENT_RUNTIME_ALLOW_ROOT_AGENTS: "1" }, ...racing.map((a) => a.env(fake))));
  repo = await mkdtemp(join(tmpdir(), "agent-attempts-"));
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Test Person");
  git("config", "user.email", "person@example.com");
  await writeFile(join(repo, "README.md"), "a repository\n");
  git("add", ".");
  git("commit", "-q", "-m", "start");
}, 60_000);
afterAll(async () => {
  await rt?.dispose();
  await fake?.close();
  await registry?.close();
});

async function json<T>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return JSON.parse(text) as T;
}
const send = (path: string, method: string, body: unknown) =>
  rt.api(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

type Attempt = {
  n: number;
  agent: string;
  state: string;
  verdict: string | null;
  branch: string;
  error: string | null;
  changes: { files: number; added: number; removed: number } | null;
  costUsd: number | null;
};
type Group = { id: string; state: string; base: { commit: string }; attempts: Attempt[] };
type Diff = { files: { path: string; status: string; added: number | null; removed: number | null }[]; diff: string };

it(
  "installs Claude Code and Codex",
  async () => {
    for (const agent of racing) await json(send(`/v1/agents/${agent.id}/install`, "POST", agent.install));
  },
  INSTALL_TIMEOUT_MS,
);

it(
  "races them as two attempts of one group on one machine; the compare view shows both changes",
  async () => {
    // Attempts run sandboxed as tasks do; this team's rule for tasks lets them reach their model (the fake on 127.0.0.1).
    const sandbox = [
      { name: "tasks reach the model", match: { origins: ["task"] }, profile: "workspace", network: { mode: "allowlist", allow: [new URL(fake.url).host] } },
    ];
    const etag = (await send("/v1/config/policy", "PUT", { rules: [], sandbox })).headers.get("etag");
    await waitFor(async () => {
      const body = (await (await rt.api("/v1/config/policy/status")).json()) as { machines: { machine: string; version: string | null }[] };
      return body.machines.some((m) => m.machine === "local" && m.version === etag);
    }, "the machine's object to hold the policy");
    // The same prompt for both, a path relative to each attempt's own worktree; nobody is asked: the group's policy answers.
    const policy = {
      rules: [
        { name: "edits", match: { kinds: ["edit"] }, decision: "allow" },
        { name: "its shell writes", match: { kinds: ["execute"] }, decision: "allow" },
      ],
    };
    const created = await json<Group>(
      send("/v1/attempts", "POST", {
        prompt: WRITE_PROMPT("greeting.txt"),
        cwd: repo,
        attempts: racing.map((a) => ({ agent: a.id, machine: "local" })),
        check: { command: "test -s greeting.txt" },
        policy,
      }),
      201,
    );
    const group = await waitFor(
      async () => {
        const read = await json<Group>(rt.api(`/v1/attempts/${created.id}`));
        return read.state === "finished" ? read : null;
      },
      "both attempts finished",
      TURN_TIMEOUT_MS - 10_000,
    );
    for (const [i, attempt] of group.attempts.entries()) {
      expect(attempt, JSON.stringify(attempt)).toMatchObject({
        agent: racing[i]!.id,
        state: "done",
        verdict: "passed",
        changes: { files: 1, added: 1, removed: 0 },
      });
      expect(git("show", `${attempt.branch}:greeting.txt`)).toBe(FILE_CONTENT);
      const diff = await json<Diff>(rt.api(`/v1/attempts/${group.id}/diff?n=${attempt.n}`));
      expect(diff.files).toEqual([{ path: "greeting.txt", status: "A", added: 1, removed: 0 }]);
      expect(diff.diff).toContain(`+${FILE_CONTENT.trim()}`);
    }
    // The two wrote the same file alike: between them, nothing differs.
    const between = await json<Diff>(rt.api(`/v1/attempts/${group.id}/diff?n=1&against=2`));
    expect(between.files).toEqual([]);
    expect(git("rev-parse", "main").trim()).toBe(group.base.commit);
  },
  TURN_TIMEOUT_MS,
);
