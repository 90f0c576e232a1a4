/**
 * The sandbox on real bubblewrap, one level below the tunnel: the machine's ACP servers (sidecar/acp)
 * start the built mock agent inside it and the agent acts on its own (`/sh`, `/fetch`). What it must not
 * do fails inside; what it may do works; the owner's floor wins over a looser spec asked for.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import { AcpServers } from "../acp/acp-bridge";
import { ProcessManager } from "../processes/processes";
import { ownerLimits } from "./owner-limits";
import { Sandboxes, type SandboxBlock } from "./sandboxes";

const MOCK = resolve(import.meta.dirname, "../dist/mock-agent.js");

let root: string;
let home: string;
let dataDir: string;
let configDir: string;
let work: string;
const servers: Server[] = [];
let listedPort = 0;
let unlistedPort = 0;

function serve(text: string): Promise<number> {
  return new Promise((ok) => {
    const server = createServer((_req, res) => res.end(text)).listen(0, "127.0.0.1", () => ok((server.address() as { port: number }).port));
    servers.push(server);
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "sandbox-enforce-"));
  home = join(root, "home");
  dataDir = join(root, "data");
  configDir = join(home, ".config", "agent-runtime");
  work = join(root, "work");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PLANTED-PRIVATE-KEY\n");
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "credentials.json"), '{"token":"PLANTED-MACHINE-TOKEN"}\n');
  mkdirSync(join(dataDir, "checkpoints"), { recursive: true });
  writeFileSync(join(dataDir, "checkpoints", "state.json"), "PLANTED-CHECKPOINT\n");
  mkdirSync(work, { recursive: true });
  execFileSync("git", ["init", "-q", work]);
  listedPort = await serve("listed server");
  unlistedPort = await serve("unlisted server");
});

afterAll(() => {
  for (const s of servers) s.close();
  rmSync(root, { recursive: true, force: true });
});

function machine(floor: { sandbox?: string; allowNetwork?: string }) {
  const processes = new ProcessManager();
  const sandboxes = new Sandboxes({ limits: ownerLimits(floor, null, home), home, dataDir, configDir });
  const blocks: SandboxBlock[] = [];
  sandboxes.onBlock((b) => blocks.push(b));
  const launch = async () => ({
    command: process.execPath,
    args: [MOCK],
    cwd: root,
    env: { HOME: home, MOCK_AGENT_STATE_DIR: join(dataDir, "mock-agent", "sessions") },
  });
  const acp = new AcpServers(
    processes,
    launch,
    { maxEvents: 1000, maxBytes: 1 << 20, endedKept: 4, endedKeptMs: 1000, idleStopMs: 0 },
    async () => [],
    null,
    sandboxes,
  );
  let id = 1;
  const call = async (serverId: string, method: string, params: unknown, extra: Record<string, unknown> = {}) => {
    const answer = await acp.post({ serverId, message: JSON.stringify({ jsonrpc: "2.0", id: id, method, params }), method, awaitId: id++, ...extra } as never);
    if (answer.status !== 200) throw new Error(`${method}: ${answer.status}`);
    return JSON.parse(answer.body) as { result?: Record<string, unknown>; error?: unknown };
  };
  /** A prompt's turn, and what the agent said in it. */
  const say = async (serverId: string, sessionId: string, text: string): Promise<string> => {
    const found = acp.lookup(serverId)!;
    const from = found.server.log.lastSeq;
    await call(serverId, "session/prompt", { sessionId, prompt: [{ type: "text", text }] });
    const lines = acp
      .lookup(serverId)!
      .server.log.since(from)
      .events.map(([, json]) => JSON.parse(json) as { params?: { update?: { sessionUpdate?: string; content?: { text?: string } } } });
    return lines
      .filter((m) => m.params?.update?.sessionUpdate === "agent_message_chunk")
      .map((m) => m.params!.update!.content!.text)
      .join("");
  };
  return { acp, processes, sandboxes, blocks, call, say };
}

describe("an agent under workspace and an allowlist naming one loopback port", () => {
  it("reads no secret, writes only its folder, reaches only the listed port", { timeout: 60_000 }, async () => {
    const m = machine({ sandbox: "workspace", allowNetwork: `127.0.0.1:${listedPort}` });
    try {
      await m.call("s1", "initialize", { protocolVersion: 1, clientCapabilities: {} }, { agent: "mock" });
      const created = await m.call("s1", "session/new", { cwd: work, mcpServers: [] }, { cwd: work });
      const sessionId = created.result!.sessionId as string;

      expect(await m.say("s1", sessionId, "/sh cat ~/.ssh/id_ed25519")).toMatch(/exit code 1[\s\S]*Permission denied/);
      expect(await m.say("s1", sessionId, `/sh cat ${join(configDir, "credentials.json")}`)).not.toContain("PLANTED-MACHINE-TOKEN");
      expect(await m.say("s1", sessionId, `/sh cat ${join(dataDir, "checkpoints", "state.json")}`)).not.toContain("PLANTED-CHECKPOINT");

      expect(await m.say("s1", sessionId, "/sh echo inside > inside.txt")).toContain("exit code 0");
      expect(readFileSync(join(work, "inside.txt"), "utf8")).toBe("inside\n");
      expect(await m.say("s1", sessionId, `/sh echo out > ${join(root, "outside.txt")}`)).toContain("Read-only file system");
      expect(existsSync(join(root, "outside.txt"))).toBe(false);
      expect(await m.say("s1", sessionId, "/sh echo evil > .git/hooks/pre-commit")).toContain("Read-only file system");
      expect(existsSync(join(work, ".git", "hooks", "pre-commit"))).toBe(false);
      expect(await m.say("s1", sessionId, "/sh echo evil >> .git/config")).toContain("Read-only file system");

      expect(await m.say("s1", sessionId, `/fetch http://127.0.0.1:${listedPort}/`)).toContain("status 200: listed server");
      expect(await m.say("s1", sessionId, `/fetch http://127.0.0.1:${unlistedPort}/`)).toContain("status 403");
      // A socket opened directly, not through the proxy, finds the sandbox's own loopback: nothing there.
      const direct = `node -e "require('net').connect(${listedPort},'127.0.0.1').on('connect',()=>{console.log('CONNECTED');process.exit(0)}).on('error',(e)=>{console.log(e.code);process.exit(1)})"`;
      expect(await m.say("s1", sessionId, `/sh ${direct}`)).toContain("ECONNREFUSED");
      expect(m.blocks.map((b) => b.target)).toEqual([`GET 127.0.0.1:${unlistedPort}`]);
    } finally {
      await m.processes.stopAll();
    }
  });

  it("lets an agent commit in a worktree session, never touch the repository's hooks", { timeout: 60_000 }, async () => {
    const repo = join(root, "repo");
    const tree = join(root, "repo-tree");
    const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args]);
    git("init", "-q", repo);
    writeFileSync(join(repo, "a.txt"), "a\n");
    git("-C", repo, "add", ".");
    git("-C", repo, "commit", "-qm", "first");
    git("-C", repo, "worktree", "add", "-q", "-b", "agent", tree);
    const m = machine({ sandbox: "workspace", allowNetwork: "none" });
    try {
      await m.call("s3", "initialize", { protocolVersion: 1, clientCapabilities: {} }, { agent: "mock" });
      const created = await m.call("s3", "session/new", { cwd: tree, mcpServers: [] }, { cwd: tree });
      const sessionId = created.result!.sessionId as string;
      const commit = await m.say(
        "s3",
        sessionId,
        "/sh echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@example.com commit -qm agent && git log --format=%s -1",
      );
      expect(commit).toMatch(/exit code 0[\s\S]*agent/);
      expect(git("-C", repo, "log", "--format=%s", "-1", "agent").toString().trim()).toBe("agent");
      expect(await m.say("s3", sessionId, `/sh echo evil > ${join(repo, ".git", "hooks", "post-commit")}`)).toContain("Read-only file system");
      expect(await m.say("s3", sessionId, `/sh echo evil >> ${join(repo, ".git", "config")}`)).toContain("Read-only file system");
    } finally {
      await m.processes.stopAll();
    }
  });

  it("keeps the owner's floor when a looser sandbox is asked for", { timeout: 60_000 }, async () => {
    const m = machine({ sandbox: "workspace", allowNetwork: "none" });
    // The team asks for full access, and names one more path nobody may read: the floor's profile and the path both hold.
    writeFileSync(join(home, "notes.txt"), "PLANTED-NOTES\n");
    const full: SandboxSpec = { profile: "full", network: { mode: "open", allow: [] }, denyRead: ["~/notes.txt"] };
    try {
      await m.call("s2", "initialize", { protocolVersion: 1, clientCapabilities: {} }, { agent: "mock", sandbox: full });
      const created = await m.call("s2", "session/new", { cwd: work, mcpServers: [] }, { cwd: work });
      const sessionId = created.result!.sessionId as string;
      expect(await m.say("s2", sessionId, "/sh cat ~/.ssh/id_ed25519")).toContain("Permission denied");
      expect(await m.say("s2", sessionId, `/fetch http://127.0.0.1:${listedPort}/`)).toContain("error");
      expect(await m.say("s2", sessionId, "/sh cat ~/notes.txt")).toMatch(/exit code 1[\s\S]*Permission denied/);
      expect(await m.say("s2", sessionId, "/sh echo ok > written.txt")).toContain("exit code 0");
      // A client resuming the session on another server (as after a discovery): its folder is writable there too.
      await m.call("s2b", "initialize", { protocolVersion: 1, clientCapabilities: {} }, { agent: "mock" });
      await m.call("s2b", "session/resume", { sessionId, cwd: work, mcpServers: [] });
      expect(await m.say("s2b", sessionId, "/sh echo ok > resumed.txt")).toContain("exit code 0");
      expect(readFileSync(join(work, "resumed.txt"), "utf8")).toBe("ok\n");
    } finally {
      await m.processes.stopAll();
    }
  });
});
