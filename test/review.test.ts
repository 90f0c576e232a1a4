/**
 * Review and ship through the whole runtime (docs/architecture.md, "Review and ship"): a mock session
 * edits files over two turns; the changes API tells each turn's and the session's exactly, a file's diff,
 * a turn's revert and its refusal over a later edit; commit and push to a bare repository on the
 * machine; a pull request without the GitHub CLI; a push that needs credentials fails at once with git's
 * message; two sessions in two worktrees of one repository commit on their own branches.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
let repo: string;

beforeEach(async () => {
  rt = await startRuntime({ machines: ["local"] });
  repo = join(rt.dir, "project");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.name", "Test Person");
  git(repo, "config", "user.email", "person@example.com");
  writeFileSync(join(repo, "a.txt"), "one\ntwo\n");
  writeFileSync(join(repo, "b.txt"), "bee\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "start");
});
afterEach(async () => {
  await rt.dispose();
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

async function json<T>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  expect(r.status, await r.clone().text()).toBe(status);
  return (await r.json()) as T;
}

const post = (path: string, body: unknown) => rt.api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

type Record = {
  id: string;
  sessionId: string;
  cwd: string;
  lastChanges: unknown;
  worktree: { branch: string; base: string; path: string; repository: string } | null;
};

/** A mock session in `cwd` (optionally in its own worktree): its server, ACP id and record. */
async function session(serverId: string, cwd: string, meta?: unknown): Promise<{ prompt: (text: string) => Promise<unknown>; record: () => Promise<Record> }> {
  await json(rpc(rt, serverId, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock"));
  const created = await json<{ result: { sessionId: string; _meta?: unknown } }>(
    rpc(rt, serverId, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd, mcpServers: [], ...(meta ? { _meta: meta } : {}) } }),
  );
  const { sessionId } = created.result;
  let id = 10;
  return {
    prompt: async (text) =>
      (
        await json<{ result: unknown }>(
          rpc(rt, serverId, { jsonrpc: "2.0", id: id++, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text }] } }),
        )
      ).result,
    record: () =>
      waitFor(
        async () => (await json<{ sessions: Record[] }>(rt.api("/v1/sessions"))).sessions.find((s) => s.sessionId === sessionId),
        `the record of ${sessionId}`,
      ),
  };
}

it("tells each turn's changes and the session's, a file's diff, and reverts a turn (409 over a later edit)", async () => {
  const s = await session("review", repo);
  const first = await s.prompt("/write a.txt one two three");
  expect(first).toMatchObject({ stopReason: "end_turn", _meta: { "agent-runtime/changes": { turn: 1, files: 1, additions: 1, deletions: 2 } } });
  await s.prompt("/write src/new.txt hello");
  await s.prompt("/delete b.txt");
  const record = await s.record();
  expect(record.lastChanges).toEqual({ turn: 3, files: 1, additions: 0, deletions: 1 });

  const base = `/v1/sessions/${record.id}`;
  const turn2 = await json<{ files: unknown[]; totals: unknown; turns: number }>(rt.api(`${base}/changes?turn=2`));
  expect(turn2.files).toEqual([{ path: "src/new.txt", status: "added", additions: 1, deletions: 0 }]);
  const whole = await json<{ files: unknown[]; totals: unknown; turns: number; turn: null }>(rt.api(`${base}/changes`));
  expect(whole).toMatchObject({ turn: null, turns: 3, totals: { files: 3, additions: 2, deletions: 3 } });
  expect(whole.files).toEqual([
    { path: "a.txt", status: "modified", additions: 1, deletions: 2 },
    { path: "b.txt", status: "deleted", additions: 0, deletions: 1 },
    { path: "src/new.txt", status: "added", additions: 1, deletions: 0 },
  ]);
  const diff = await json<{ diff: string; tooLarge: boolean }>(rt.api(`${base}/changes/diff?turn=1&path=a.txt`));
  expect(diff.diff).toContain("-one\n-two\n+one two three\n");

  const transcript = await json<{ entries: { kind: string; data?: { changes?: unknown } }[] }>(rt.api(`${base}/transcript`));
  expect(transcript.entries.filter((e) => e.kind === "stop").map((e) => e.data?.changes)).toEqual([
    { turn: 1, files: 1, additions: 1, deletions: 2 },
    { turn: 2, files: 1, additions: 1, deletions: 0 },
    { turn: 3, files: 1, additions: 0, deletions: 1 },
  ]);

  expect(await json(post(`${base}/revert`, { turn: 2 }))).toEqual({ turn: 2, restored: [], removed: ["src/new.txt"] });
  writeFileSync(join(repo, "a.txt"), "a person's edit\n");
  const refused = await post(`${base}/revert`, { turn: 1 });
  expect(refused.status).toBe(409);
  expect(await problemOf(refused)).toMatchObject({ files: ["a.txt"] });
  expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("a person's edit\n");
  await json(post(`${base}/revert`, { turn: 1, force: true }));
  expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\ntwo\n");

  const outside = await rt.api(`${base}/changes/diff?path=../secret.txt`);
  expect(outside.status).toBe(400);
  const audit = await json<{ entries: { action: string; path?: string }[] }>(rt.api("/v1/audit?limit=50"));
  expect(JSON.stringify(audit)).toContain("/revert");
});

it("commits and pushes to a bare repository, answers the compare page without the GitHub CLI, and fails at once on a push that needs credentials", async () => {
  const bare = join(rt.dir, "origin.git");
  git(rt.dir, "init", "-q", "--bare", bare);
  git(repo, "remote", "add", "origin", bare);
  writeFileSync(join(repo, "a.txt"), "changed\n");
  writeFileSync(join(repo, "c.txt"), "new\n");

  const status = await json<{ branch: string; files: { path: string }[]; root: string }>(rt.api(`/v1/git/status?cwd=${encodeURIComponent(repo)}`));
  expect(status.branch).toBe("main");
  expect(status.files.map((f) => f.path).sort()).toEqual(["a.txt", "c.txt"]);

  const commit = await json<{ commit: string; branch: string; summary: string }>(
    post("/v1/git/commit", { cwd: repo, message: "Ship it", paths: ["a.txt"] }),
    201,
  );
  expect(commit).toMatchObject({ branch: "main", summary: expect.stringContaining("Ship it") });
  expect(git(repo, "show", "--name-only", "--format=", "HEAD").trim()).toBe("a.txt");
  expect(git(repo, "status", "--porcelain")).toContain("?? c.txt");

  const pushed = await json<{ remote: string; branch: string }>(post("/v1/git/push", { cwd: repo, setUpstream: true }));
  expect(pushed).toMatchObject({ remote: "origin", branch: "main" });
  expect(git(bare, "rev-parse", "main").trim()).toBe(commit.commit);

  git(repo, "remote", "set-url", "origin", "git@github.com:someone/project.git");
  const pr = await json<{ opened: boolean; url: string; reason: string }>(post("/v1/git/pull-request", { cwd: repo, title: "Ship it", base: "main" }));
  expect(pr).toMatchObject({ opened: false, url: "https://github.com/someone/project/compare/main...main?expand=1" });
  expect(pr.reason).toMatch(/GitHub CLI/);

  // A remote that asks for a password: git must not wait for one.
  const server = createServer((_req, res) => res.writeHead(401, { "www-authenticate": 'Basic realm="git"' }).end());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    git(repo, "remote", "set-url", "origin", `http://127.0.0.1:${(server.address() as AddressInfo).port}/project.git`);
    const started = Date.now();
    const refused = await post("/v1/git/push", { cwd: repo });
    expect(refused.status).toBe(422);
    const problem = await problemOf(refused);
    expect(errorCode(problem)).toBe("git_failed");
    expect(problem.detail).toMatch(/terminal prompts disabled|could not read Username|Authentication failed/);
    expect(Date.now() - started).toBeLessThan(30_000); // it failed, not the 2-minute deadline
  } finally {
    server.close();
  }

  const notRepo = await rt.api(`/v1/git/status?cwd=${encodeURIComponent(rt.dir)}`);
  expect(notRepo.status).toBe(422);
});

it("runs two sessions in two worktrees of one repository, each committing on its own branch", async () => {
  const one = await session("wt-1", repo, { "agent-runtime/worktree": { name: "Fix the login" } });
  const two = await session("wt-2", repo, { "agent-runtime/worktree": { base: "main" } });
  await one.prompt("/write login.txt fixed");
  await two.prompt("/write docs.txt written");
  const [r1, r2] = [await one.record(), await two.record()];
  expect(r1.worktree).toMatchObject({ repository: repo, base: "main", branch: expect.stringMatching(/^agent\/fix-the-login-[0-9a-f]{6}$/) });
  expect(r2.worktree).toMatchObject({ repository: repo, base: "main", branch: expect.stringMatching(/^agent\/session-[0-9a-f]{6}$/) });
  expect(r1.cwd).toBe(r1.worktree!.path);
  expect(readFileSync(join(r1.cwd, "login.txt"), "utf8")).toBe("fixed\n");

  for (const r of [r1, r2]) await json(post("/v1/git/commit", { cwd: r.cwd, message: `work in ${r.worktree!.branch}` }), 201);
  expect(git(repo, "log", "--format=%s", "-1", r1.worktree!.branch).trim()).toBe(`work in ${r1.worktree!.branch}`);
  expect(git(repo, "show", "--name-only", "--format=", r2.worktree!.branch).trim()).toBe("docs.txt");
  expect(git(repo, "status", "--porcelain")).toBe(""); // the repository's own folder saw none of it

  const listed = await json<{ worktrees: { path: string; branch: string; ahead: number; session: string | null; main: boolean }[] }>(
    rt.api(`/v1/worktrees?cwd=${encodeURIComponent(repo)}`),
  );
  expect(listed.worktrees.find((w) => w.path === r1.cwd)).toMatchObject({ branch: r1.worktree!.branch, ahead: 1, session: r1.sessionId, main: false });
  expect(listed.worktrees.filter((w) => w.main)).toHaveLength(1);

  writeFileSync(join(r2.cwd, "dirty.txt"), "uncommitted\n");
  const refused = await rt.api(`/v1/worktrees?path=${encodeURIComponent(r2.cwd)}`, { method: "DELETE" });
  expect(refused.status).toBe(409);
  expect(await json(rt.api(`/v1/worktrees?path=${encodeURIComponent(r1.cwd)}`, { method: "DELETE" }))).toEqual({ deleted: true });
  // A worktree the person made themselves is theirs to remove, on the machine.
  const own = join(rt.dir, "own-worktree");
  git(repo, "worktree", "add", "-q", "-b", "mine", own);
  const notOurs = await rt.api(`/v1/worktrees?path=${encodeURIComponent(own)}&force=true`, { method: "DELETE" });
  expect(notOurs.status).toBe(403);
  expect(git(repo, "worktree", "list")).toContain(own);
  expect(git(repo, "branch", "--list", r1.worktree!.branch).trim()).toContain(r1.worktree!.branch); // its commits stay
});
