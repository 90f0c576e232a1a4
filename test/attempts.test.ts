/**
 * Attempt groups (docs/architecture.md, "Attempt groups"), with the mock agent on real sidecars and the
 * machines' real git: three attempts of one prompt in their own worktrees, each writing its own change,
 * a check (a script of the repository) failing for one; compared, diffed against the base and against
 * each other; the passing one merged into the base branch; the others discarded; an attempt on a machine
 * that is away runs when it is back; cancel stops every attempt; a GitHub trigger starts a group, whose
 * summary goes on the issue through the machine's GitHub CLI (a fake `gh` on its PATH); refusals.
 */
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type Attempt = {
  n: number;
  agent: string;
  machine: string;
  task: string | null;
  branch: string;
  state: string;
  verdict: string | null;
  check: { exitCode: number | null; durationMs: number; tail: string; timedOut: boolean } | null;
  changes: { files: number; added: number; removed: number } | null;
  costUsd: number | null;
  durationMs: number | null;
  discarded: boolean;
};
type Group = {
  id: string;
  state: string;
  base: { branch: string | null; commit: string; agreedOn: string };
  attempts: Attempt[];
  picked: { n: number; action: string; how: string; commit: string | null } | null;
};

let rt: Runtime;
let repo: string;
const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local", "away"], vars: { RECONNECT_GRACE_MS: "1000" } });
  repo = join(rt.dir, "repo");
  mkdirSync(repo);
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Test Person");
  git("config", "user.email", "person@example.com");
  // The check: attempt 2's change is "wrong" (its folder's name is in what it wrote).
  writeFileSync(join(repo, "check.sh"), 'if grep -q -- "-2-mock" notes.txt; then echo "notes.txt: attempt two is wrong"; exit 1; fi\necho "all good"\n');
  writeFileSync(join(repo, "README.md"), "a repository\n");
  git("add", ".");
  git("commit", "-q", "-m", "start");
});
afterAll(async () => {
  await rt?.dispose();
});

const post = (path: string, body: unknown, token?: string) =>
  rt.api(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
async function json<T>(res: Promise<Response> | Response, status = 200): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return JSON.parse(text) as T;
}
/** Where an attempt's branch is checked out. */
const worktreeOf = (branch: string) => {
  const entry = git("worktree", "list", "--porcelain")
    .split("\n\n")
    .find((w) => w.includes(`branch refs/heads/${branch}\n`) || w.endsWith(`branch refs/heads/${branch}`));
  return /^worktree (.*)$/m.exec(entry ?? "")![1]!;
};
const read = (id: string) => json<Group>(rt.api(`/v1/attempts/${id}`));
const until = (id: string, ok: (g: Group) => boolean, what: string, timeoutMs = 30_000) =>
  waitFor(
    async () => {
      const group = await read(id);
      return ok(group) ? group : null;
    },
    `group ${id}: ${what}`,
    timeoutMs,
  );

describe("attempt groups", () => {
  let group: Group;

  it("run one prompt as three attempts, each in its worktree on its own branch, each checked", async () => {
    const head = git("rev-parse", "main").trim();
    const created = await json<Group>(
      post("/v1/attempts", {
        prompt: "/write notes.txt written in {{folder}}",
        cwd: repo,
        attempts: [{ agent: "mock" }, { agent: "mock", machine: "local" }, { agent: "mock" }],
        check: { command: "sh check.sh", timeoutSeconds: 60 },
      }),
      201,
    );
    expect(created.id).toMatch(/^grp-[0-9a-f]{12}$/);
    expect(created.base).toEqual({ branch: "main", commit: head, agreedOn: "local" });
    expect(created.attempts.map((a) => a.branch)).toEqual([1, 2, 3].map((n) => `agent/${created.id}-${n}-mock`));
    for (const a of created.attempts) expect(["queued", "running"]).toContain(a.state);

    group = await until(created.id, (g) => g.state === "finished", "every attempt finished");
    expect(group.attempts.map((a) => [a.state, a.verdict, a.check?.exitCode])).toEqual([
      ["done", "passed", 0],
      ["done", "failed", 1],
      ["done", "passed", 0],
    ]);
    expect(group.attempts[1]!.check!.tail).toContain("attempt two is wrong");
    expect(group.attempts[0]!.check!.tail).toContain("all good");
    for (const a of group.attempts) {
      expect(a.changes).toEqual({ files: 1, added: 1, removed: 0 });
      expect(a.task).toMatch(/^task-[0-9a-f]{16}-local$/);
      expect(a.durationMs).toBeGreaterThan(0);
      // Its cost: the session's summed usage as its agent reported it (the mock reports one after each turn).
      const session = (await json<{ session: string }>(rt.api(`/v1/tasks/${a.task}`))).session;
      const usage = (await json<{ usage: { cost: { amount: number; currency: string } | null } }>(rt.api(`/v1/sessions/${session}`))).usage;
      expect(usage.cost?.currency).toBe("USD");
      expect(a.costUsd).toBeGreaterThan(0);
      expect(a.costUsd).toBe(usage.cost!.amount);
      // Each attempt's work is a commit on its own branch, from the base.
      expect(git("show", `${a.branch}:notes.txt`)).toBe(`written in ${group.id}-${a.n}-mock\n`);
      expect(git("rev-parse", `${a.branch}~1`).trim()).toBe(head);
    }
    // The base branch is untouched until a pick.
    expect(git("rev-parse", "main").trim()).toBe(head);
    const listed = await json<{ groups: Group[] }>(rt.api("/v1/attempts"));
    expect(listed.groups.map((g) => g.id)).toContain(group.id);
  });

  it("compare: each attempt against the base, and two attempts against each other", async () => {
    const one = await json<{ files: { path: string; status: string; added: number }[]; diff: string }>(rt.api(`/v1/attempts/${group.id}/diff?n=1`));
    expect(one.files).toEqual([{ path: "notes.txt", status: "A", added: 1, removed: 0 }]);
    expect(one.diff).toContain(`+written in ${group.id}-1-mock`);
    const between = await json<{ files: { path: string; status: string }[]; diff: string; from: string }>(
      rt.api(`/v1/attempts/${group.id}/diff?n=1&against=2`),
    );
    expect(between.from).toBe(group.attempts[1]!.branch);
    expect(between.files).toEqual([{ path: "notes.txt", status: "M", added: 1, removed: 1 }]);
    expect(between.diff).toContain(`-written in ${group.id}-2-mock`);
    expect(between.diff).toContain(`+written in ${group.id}-1-mock`);
  });

  it("pick merges the chosen attempt into the base branch; discard removes the others' worktrees and branches", async () => {
    const picked = await json<Group>(post(`/v1/attempts/${group.id}/pick`, { n: 1, action: "merge" }));
    expect(picked.picked).toMatchObject({ n: 1, action: "merge", how: "fast-forward" });
    expect(git("log", "--format=%s", "-1", "main").trim()).toBe(`/write notes.txt written in {{folder}}`);
    expect(git("rev-parse", "main").trim()).toBe(picked.picked!.commit);
    // main is checked out in the repository itself: the merge happened there.
    expect(readFileSync(join(repo, "notes.txt"), "utf8")).toBe(`written in ${group.id}-1-mock\n`);
    const again = await post(`/v1/attempts/${group.id}/pick`, { n: 3, action: "merge" });
    expect(again.status).toBe(409);

    const worktrees = group.attempts.map((a) =>
      git("worktree", "list", "--porcelain")
        .split("\n\n")
        .find((w) => w.includes(`refs/heads/${a.branch}`)),
    );
    const paths = worktrees.map((w) => /^worktree (.*)$/m.exec(w ?? "")?.[1]);
    expect(paths.every((p) => p && existsSync(p))).toBe(true);

    const discarded = await json<{ discarded: { n: number; worktree: boolean; branch: boolean; checkpoints: boolean }[]; group: Group }>(
      post(`/v1/attempts/${group.id}/discard`, {}),
    );
    expect(discarded.discarded).toEqual([
      { n: 2, worktree: true, branch: true, checkpoints: true },
      { n: 3, worktree: true, branch: true, checkpoints: true },
    ]);
    expect(discarded.group.attempts.map((a) => a.discarded)).toEqual([false, true, true]);
    expect(existsSync(paths[1]!)).toBe(false);
    expect(existsSync(paths[2]!)).toBe(false);
    expect(existsSync(paths[0]!)).toBe(true);
    expect(git("branch", "--list", `agent/${group.id}-*`).trim()).toBe(`+ agent/${group.id}-1-mock`);
    // What is gone cannot be diffed any more, and says so.
    expect((await rt.api(`/v1/attempts/${group.id}/diff?n=2`)).status).toBe(404);
  });

  it("an attempt on a machine that is away waits, and runs when it is back", async () => {
    await rt.sidecars.get("away")!.stop("SIGKILL");
    await waitFor(async () => {
      const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; connected: boolean }[] };
      return machines.machines.find((m) => m.id === "away")?.connected === false;
    }, "the machine to be away");
    const created = await json<Group>(
      post("/v1/attempts", {
        prompt: "/write later.txt from {{folder}}",
        cwd: repo,
        attempts: [
          { agent: "mock", machine: "local" },
          { agent: "mock", machine: "away" },
        ],
      }),
      201,
    );
    expect(created.base.agreedOn).toBe("local");
    const first = await until(created.id, (g) => g.attempts[0]!.state === "done", "the attempt on local done");
    expect(first.attempts[1]!.state).toBe("queued");
    expect(first.attempts[0]!.verdict).toBe("no_check");
    // Two machines' branches are not diffed against each other: said, not faked.
    const across = await rt.api(`/v1/attempts/${created.id}/diff?n=2&against=1`);
    expect(across.status).toBe(409);
    expect((await problemOf(across)).detail).toContain("different machines");

    await rt.addSidecar("away");
    const done = await until(created.id, (g) => g.state === "finished", "the away machine's attempt done");
    expect(done.attempts[1]).toMatchObject({ state: "done", verdict: "no_check", machine: "away", changes: { files: 1 } });
    expect(done.attempts[1]!.task).toMatch(/-away$/);
    expect(git("show", `${done.attempts[1]!.branch}:later.txt`)).toBe(`from ${created.id}-2-mock\n`);
  });

  it("cancel stops every attempt", async () => {
    const created = await json<Group>(
      post("/v1/attempts", { prompt: "/slow 200 100", cwd: repo, attempts: [{ agent: "mock" }, { agent: "mock" }], check: { command: "true" } }),
      201,
    );
    const running = await until(created.id, (g) => g.attempts.every((a) => a.state === "running" && a.task !== null), "both running");
    const task = (id: string | null) => json<{ state: string; session: string | null }>(rt.api(`/v1/tasks/${id}`));
    const session = async (id: string) => (await json<{ state: string }>(rt.api(`/v1/sessions/${id}`))).state;
    // Both turns under way (their agents started, their prompts sent).
    await Promise.all(
      running.attempts.map((a) =>
        waitFor(async () => {
          const id = (await task(a.task)).session;
          return id && (await session(id)) === "running" ? id : null;
        }, `attempt ${a.n}'s turn to run`),
      ),
    );
    const cancelled = await json<Group>(post(`/v1/attempts/${created.id}/cancel`, {}));
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.attempts.map((a) => a.state)).toEqual(["cancelled", "cancelled"]);
    // Each attempt's task is cancelled on its machine (which sends its turn session/cancel: tasks.test.ts).
    for (const a of running.attempts) expect((await task(a.task)).state).toBe("cancelled");
    // Still cancelled once the machines have had their say.
    expect((await read(created.id)).attempts.map((a) => a.state)).toEqual(["cancelled", "cancelled"]);
  });

  it("a check cut off by its machine going away runs again when the machine is back: the group does not stay checking", async () => {
    // The check waits for a file the test makes (kept out of the attempts' commits).
    writeFileSync(join(repo, ".git", "info", "exclude"), "release\n");
    const created = await json<Group>(
      post("/v1/attempts", {
        prompt: "/write cut.txt by {{folder}}",
        cwd: repo,
        attempts: [{ agent: "mock" }, { agent: "mock" }],
        check: { command: "while [ ! -e release ]; do sleep 0.05; done; echo released", timeoutSeconds: 300 },
      }),
      201,
    );
    await until(created.id, (g) => g.attempts.every((a) => a.state === "checking"), "both attempts checking");
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await waitFor(async () => {
      const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; connected: boolean }[] };
      return machines.machines.find((m) => m.id === "local")?.connected === false;
    }, "the machine to be away");
    const away = await read(created.id);
    expect(away.attempts.map((a) => a.state)).toEqual(["checking", "checking"]);
    for (const a of away.attempts) writeFileSync(join(worktreeOf(a.branch), "release"), "");
    await rt.addSidecar("local");
    const done = await until(created.id, (g) => g.state === "finished", "the checks run again once the machine is back");
    expect(done.attempts.map((a) => [a.state, a.verdict, a.check?.exitCode, a.changes?.files])).toEqual([
      ["done", "passed", 0, 1],
      ["done", "passed", 0, 1],
    ]);
    for (const a of done.attempts) {
      expect(a.check!.tail).toContain("released");
      // Committed once: the check ran again, the agent's work was not committed twice.
      expect(git("rev-list", "--count", `${done.base.commit}..${a.branch}`).trim()).toBe("1");
    }
  });

  it("run the check under the attempt's sandbox: under workspace it cannot write outside its worktree", async () => {
    const outside = join(repo, "escaped.txt");
    const created = await json<Group>(
      post("/v1/attempts", {
        prompt: "/write inside.txt by {{folder}}",
        cwd: repo,
        attempts: [{ agent: "mock" }, { agent: "mock" }],
        // Under /tmp the sandbox's own /tmp is private: what it writes there never reaches the machine's.
        check: { command: `touch ${outside} 2>&1; touch checked-here && echo wrote its worktree` },
      }),
      201,
    );
    const done = await until(created.id, (g) => g.state === "finished", "both checks ran");
    expect(done.attempts.map((a) => [a.state, a.verdict])).toEqual([
      ["done", "passed"],
      ["done", "passed"],
    ]);
    expect(existsSync(outside)).toBe(false);
    for (const a of done.attempts) {
      expect(a.check!.tail).toContain("wrote its worktree");
      expect(existsSync(join(worktreeOf(a.branch), "checked-here"))).toBe(true);
      // The profile in force for the attempt's agent, which its check shared.
      const session = (await json<{ session: string }>(rt.api(`/v1/tasks/${a.task}`))).session;
      const sandbox = (await json<{ sandbox: { effective: { profile: string } } }>(rt.api(`/v1/sessions/${session}`))).sandbox;
      expect(sandbox.effective.profile).toBe("workspace");
    }
  });

  it("start from a GitHub trigger, and say on the issue how the attempts went", async () => {
    // The machine's GitHub CLI: signed in, writing what it is asked to a file.
    const bin = join(rt.dir, "fake-gh");
    mkdirSync(bin);
    const asked = join(bin, "asked.json");
    writeFileSync(
      join(bin, "gh"),
      `#!/usr/bin/env node\nconst args = process.argv.slice(2);\nif (args[0] === "auth") process.exit(0);\nrequire("node:fs").writeFileSync(${JSON.stringify(asked)}, JSON.stringify(args));\nconsole.log("https://github.com/acme/app/issues/12#issuecomment-7");\n`,
    );
    chmodSync(join(bin, "gh"), 0o755);
    await rt.addSidecar("hub", { PATH: `${bin}:${process.env.PATH}` });
    const secret = "whsec-attempts-0123456789";
    const trigger = await json<{ id: string; deliveryPath: string; attempts: unknown }>(
      post("/v1/triggers", {
        kind: "github",
        secret,
        events: [{ on: "issues.labeled", label: "race" }],
        task: { machine: "hub", agent: "mock", cwd: repo, prompt: "/write notes.txt issue {{number}} by {{folder}}" },
        attempts: { attempts: [{ agent: "mock" }, { agent: "mock" }], check: { command: "sh check.sh" } },
      }),
      201,
    );
    expect(trigger.attempts).toMatchObject({ attempts: [{ agent: "mock" }, { agent: "mock" }] });
    const body = JSON.stringify({
      action: "labeled",
      label: { name: "race" },
      issue: { number: 12, title: "Race them", body: "", html_url: "https://github.com/acme/app/issues/12" },
      repository: { full_name: "acme/app" },
      sender: { login: "ada" },
    });
    const delivered = await fetch(`${rt.url}${trigger.deliveryPath}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "delivery-attempts-1",
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      },
      body,
    });
    const outcome = (await delivered.json()) as { outcome: string; task: string };
    expect(outcome).toMatchObject({ outcome: "started", task: expect.stringMatching(/^grp-/) });
    const done = await until(outcome.task, (g) => g.state === "finished", "the trigger's group finished");
    expect(done.attempts.map((a) => [a.machine, a.verdict])).toEqual([
      ["hub", "passed"],
      ["hub", "failed"],
    ]);
    const args = await waitFor(async () => (existsSync(asked) ? (JSON.parse(readFileSync(asked, "utf8")) as string[]) : null), "the summary to be posted");
    expect(args.slice(0, 4)).toEqual(["issue", "comment", "12", "--repo"]);
    const comment = args[args.indexOf("--body") + 1]!;
    expect(comment).toContain(`Attempt group \`${done.id}\` finished: 2 attempts, 1 passed \`sh check.sh\``);
    expect(comment).toContain(`| 1 | mock | hub | done | passed | 1 files, +1 −1 | \`${done.attempts[0]!.branch}\` |`);
    expect(comment).toContain("| 2 | mock | hub | done | failed (exit 1) |");
  });

  it("start from a schedule, which skips its runs while its last group is going", async () => {
    const schedule = await json<{ id: string; attempts: unknown }>(
      post("/v1/schedules", {
        cron: "* * * * * *",
        timezone: "UTC",
        task: { machine: "local", agent: "mock", cwd: repo, prompt: "/slow 30 100" },
        attempts: { attempts: [{ agent: "mock" }, { agent: "mock" }] },
      }),
      201,
    );
    expect(schedule.attempts).toMatchObject({ attempts: [{ agent: "mock" }, { agent: "mock" }] });
    type Runs = { runs: { task: string | null; skipped: string | null }[] };
    const runs = await waitFor(
      async () => {
        const read = await json<Runs>(rt.api(`/v1/schedules/${schedule.id}`));
        return read.runs.some((r) => r.task) && read.runs.some((r) => r.skipped) ? read.runs : null;
      },
      "a run that started a group and a later one skipped",
      20_000,
    );
    await json(
      rt.api(`/v1/schedules/${schedule.id}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ paused: true }) }),
    );
    const started = runs.find((r) => r.task)!.task!;
    expect(started).toMatch(/^grp-[0-9a-f]{12}$/);
    expect(runs.find((r) => r.skipped)!.skipped).toContain(started);
    const group = await read(started);
    expect(group.attempts.map((a) => [a.agent, a.machine])).toEqual([
      ["mock", "local"],
      ["mock", "local"],
    ]);
    expect((await json<Group>(post(`/v1/attempts/${started}/cancel`, {}))).state).toBe("cancelled");
  });

  it("work under the group's own policy, with no person asked", async () => {
    const policy = { rules: [{ name: "no shells", match: { kinds: ["execute"] }, decision: "deny" }] };
    const created = await json<Group>(
      post("/v1/attempts", { prompt: "/permission execute rm -rf ~", cwd: repo, attempts: [{ agent: "mock" }, { agent: "mock" }], policy }),
      201,
    );
    const done = await until(created.id, (g) => g.state === "finished", "both attempts answered by the policy");
    expect(done.attempts.map((a) => [a.state, a.verdict])).toEqual([
      ["done", "no_check"],
      ["done", "no_check"],
    ]);
    const task = await json<{ result: { lastMessage: string } }>(rt.api(`/v1/tasks/${done.attempts[0]!.task}`));
    expect(task.result.lastMessage).toBe("Permission denied: Run rm -rf ~");
  });

  it("refuse what they should", async () => {
    const base = { prompt: "/write x.txt x", cwd: repo, attempts: [{ agent: "mock" }, { agent: "mock" }] };
    expect((await post("/v1/attempts", { ...base, attempts: [{ agent: "mock" }] })).status).toBe(400);
    const nowhere = await post("/v1/attempts", { ...base, attempts: [{ agent: "mock" }, { agent: "mock", machine: "nowhere" }] });
    expect(nowhere.status).toBe(404);
    const badBase = await post("/v1/attempts", { ...base, base: "no-such-branch" });
    expect(badBase.status).toBe(422);
    expect(errorCode(await problemOf(badBase))).toBe("git_failed");
    const viewer = (await json<{ token: string }>(post("/v1/tokens", { name: "attempts-viewer", role: "viewer" }), 201)).token;
    expect((await post("/v1/attempts", base, viewer)).status).toBe(403);
    expect((await rt.api("/v1/attempts", { headers: { authorization: `Bearer ${viewer}` } })).status).toBe(200);
    expect((await post(`/v1/attempts/${group.id}/cancel`, {}, viewer)).status).toBe(403);
    const scoped = (await json<{ token: string }>(post("/v1/tokens", { name: "attempts-away-only", role: "member", machines: ["away"] }), 201)).token;
    expect((await rt.api(`/v1/attempts/${group.id}`, { headers: { authorization: `Bearer ${scoped}` } })).status).toBe(404);
    expect((await post("/v1/attempts", base, scoped)).status).toBe(403);
    expect((await rt.api("/v1/attempts/grp-000000000000")).status).toBe(404);
    expect((await rt.api("/v1/attempts/nope")).status).toBe(400);
  });
});

describe("attempt groups when the worker restarts", () => {
  it("a check whose machine object restarted mid-check is run again once the sidecar is back, and its group finishes", { timeout: 90_000 }, async () => {
    const rt2 = await startRuntime({ machines: ["local"], persist: true });
    try {
      const repo2 = join(rt2.dir, "repo");
      mkdirSync(repo2);
      const git2 = (...args: string[]) => execFileSync("git", args, { cwd: repo2, encoding: "utf8" });
      git2("init", "-q", "-b", "main");
      git2("config", "user.name", "Test Person");
      git2("config", "user.email", "person@example.com");
      writeFileSync(join(repo2, "README.md"), "a repository\n");
      writeFileSync(join(repo2, ".gitignore"), "release\n");
      git2("add", ".");
      git2("commit", "-q", "-m", "start");
      const api = (path: string, init?: RequestInit) => rt2.api(path, init);
      const group = async (id: string) => json<Group>(api(`/v1/attempts/${id}`));
      const created = await json<Group>(
        api("/v1/attempts", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            prompt: "/write restart.txt by {{folder}}",
            cwd: repo2,
            attempts: [{ agent: "mock" }, { agent: "mock" }],
            check: { command: "while [ ! -e release ]; do sleep 0.05; done; echo released", timeoutSeconds: 300 },
          }),
        }),
        201,
      );
      await waitFor(async () => (await group(created.id)).attempts.every((a) => a.state === "checking"), "both attempts checking");
      // The objects restart while both checks wait: what awaited their answers is gone with them.
      await rt2.restartWorker();
      const worktrees = git2("worktree", "list", "--porcelain");
      for (const a of created.attempts) {
        const entry = worktrees.split("\n\n").find((w) => w.includes(`branch refs/heads/${a.branch}`));
        writeFileSync(join(/^worktree (.*)$/m.exec(entry ?? "")![1]!, "release"), "");
      }
      const done = await waitFor(
        async () => {
          const read = await group(created.id).catch(() => null);
          return read?.state === "finished" ? read : null;
        },
        "the group to finish once the sidecar said hello to the restarted worker",
        60_000,
      );
      expect(done.attempts.map((a) => [a.state, a.verdict, a.check?.tail.trim(), a.changes?.files])).toEqual([
        ["done", "passed", "released", 1],
        ["done", "passed", "released", 1],
      ]);
    } finally {
      await rt2.dispose();
    }
  });
});
