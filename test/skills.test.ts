/**
 * Team-wide skills: validation at the door, ETag/If-Match, persistence across a restart of the
 * runtime, and every connected machine materializing the skills on disk (git sources from a
 * local bare repository made here: no network).
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, readdir, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type Status = {
  version: string;
  machines: {
    machine: string;
    version: string | null;
    appliedAtMs: number | null;
    skills: string[];
    perAgent: Record<string, string[]>;
    errors: { source: string; error: string }[];
    error: string | null;
  }[];
};

let rt: Runtime;
let repo: string;
const homes: Record<string, string> = {};

/** A bare git repository with two skills on `main`, a third only on tag v2, and a non-skill folder. */
async function makeSkillsRepo(root: string): Promise<string> {
  const work = join(root, "skills-work");
  const bare = join(root, "skills.git");
  const git = (cwd: string, ...args: string[]) =>
    execFileSync("git", args, {
      cwd,
      stdio: "pipe",
      env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" },
    });
  for (const [dir, body] of [
    ["pack/review", "# Review\nReview code carefully."],
    ["pack/deploy", "# Deploy\nShip it."],
  ] as const) {
    await mkdir(join(work, dir), { recursive: true });
    await writeFile(join(work, dir, "SKILL.md"), body);
  }
  await mkdir(join(work, "pack", "not-a-skill"), { recursive: true });
  await writeFile(join(work, "pack", "not-a-skill", "README.md"), "no SKILL.md here");
  git(root, "init", "--quiet", "--initial-branch=main", work);
  git(work, "add", ".");
  git(work, "commit", "--quiet", "-m", "two skills");
  await mkdir(join(work, "pack", "triage"), { recursive: true });
  await writeFile(join(work, "pack", "triage", "SKILL.md"), "# Triage");
  git(work, "add", ".");
  git(work, "commit", "--quiet", "-m", "third skill");
  git(work, "tag", "v2");
  git(work, "reset", "--quiet", "--hard", "HEAD~1");
  git(root, "clone", "--quiet", "--bare", work, bare);
  git(work, "push", "--quiet", "--tags", bare);
  return bare;
}

beforeAll(async () => {
  rt = await startRuntime({ machines: [], persist: true });
  repo = await makeSkillsRepo(rt.dir);
  for (const machine of ["m1", "m2"]) {
    homes[machine] = join(rt.dir, `home-${machine}`);
    await mkdir(homes[machine]!, { recursive: true });
    await rt.addSidecar(machine, { HOME: homes[machine]! });
  }
});
afterAll(async () => {
  await rt?.dispose();
});

function put(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return rt.api("/v1/config/skills", { method: "PUT", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

async function status(): Promise<Status> {
  return (await (await rt.api("/v1/config/skills/status")).json()) as Status;
}

function mockSkills(machine: string): string {
  return join(homes[machine]!, ".mock-agent", "skills");
}

describe("validation at the door", () => {
  it.each([
    ["an unknown type", { sources: [{ type: "svn", source: "x" }] }, "sources.0.type"],
    ["a missing source", { sources: [{ type: "git" }] }, "sources.0.source"],
    ["'..' in subpath", { sources: [{ type: "git", source: "file:///x", subpath: "a/../../etc" }] }, "sources.0.subpath"],
    ["an absolute subpath", { sources: [{ type: "git", source: "file:///x", subpath: "/etc" }] }, "sources.0.subpath"],
    ["a control character", { sources: [{ type: "git", source: "file:///x\u0007" }] }, "sources.0.source"],
    ["an option-like source", { sources: [{ type: "git", source: "--upload-pack=touch /tmp/x" }] }, "sources.0.source"],
    ["an option-like ref", { sources: [{ type: "git", source: "file:///x", ref: "-c core.pager=x" }] }, "sources.0.ref"],
    ["a skill name with a path", { sources: [{ type: "git", source: "file:///x", skills: ["../evil"] }] }, "sources.0.skills.0"],
    ["a github source that is not owner/repo", { sources: [{ type: "github", source: "https://evil.example/x" }] }, "sources.0.source"],
    ["a relative local path", { sources: [{ type: "local", source: "skills" }] }, "sources.0.source"],
    ["an extra field", { sources: [], extra: 1 }, ""],
    ["sources of the wrong type", { sources: "all" }, "sources"],
  ])("refuses %s with 400 naming the field", async (_what, body, field) => {
    const res = await put(body);
    expect(res.status).toBe(400);
    const problem = await problemOf(res);
    expect(errorCode(problem)).toBe("invalid_request");
    if (field) expect((problem.errors as { field: string }[]).map((e) => e.field)).toContain(field);
  });

  it("refuses a document over the size limit with 413", async () => {
    const res = await put({ sources: [{ type: "git", source: "x".repeat(70 * 1024) }] });
    expect(res.status).toBe(413);
  });
});

describe("applying on every machine", () => {
  it("PUT answers 200 with the stored document and an ETag; both machines get the skills on disk", async () => {
    const before = await rt.api("/v1/config/skills");
    expect(await before.json()).toEqual({ sources: [] });
    const config = { sources: [{ type: "git", source: repo, subpath: "pack", skills: ["review", "deploy"] }] };
    const res = await put(config, { "if-match": before.headers.get("etag")! });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(config);
    const etag = res.headers.get("etag");
    expect(etag).toMatch(/^"\d+"$/);

    const applied = await waitFor(async () => {
      const s = await status();
      return s.machines.length === 2 && s.machines.every((m) => m.version === etag) ? s : null;
    }, "both machines to apply the configuration");
    for (const m of applied.machines) expect(m).toMatchObject({ skills: ["deploy", "review"], errors: [], error: null });
    for (const machine of ["m1", "m2"]) {
      expect(await readFile(join(mockSkills(machine), "review", "SKILL.md"), "utf8")).toContain("Review code carefully");
      expect((await readdir(mockSkills(machine))).sort()).toEqual(["deploy", "review"]);
    }
  });

  it("honours ref, replaces what the earlier configuration put there and nothing else", async () => {
    const mine = join(mockSkills("m1"), "my-own-skill");
    await mkdir(mine, { recursive: true });
    await writeFile(join(mine, "SKILL.md"), "mine");
    const etag = (await rt.api("/v1/config/skills")).headers.get("etag")!;
    const res = await put({ sources: [{ type: "git", source: repo, ref: "v2", subpath: "pack", skills: ["triage"] }] }, { "if-match": etag });
    expect(res.status).toBe(200);
    const next = res.headers.get("etag");
    await waitFor(async () => (await status()).machines.every((m) => m.version === next), "the new version everywhere");
    expect((await readdir(mockSkills("m1"))).sort()).toEqual(["my-own-skill", "triage"]); // review/deploy gone, mine kept
    expect(await readFile(join(mine, "SKILL.md"), "utf8")).toBe("mine");
  });

  it("reports a broken source in status without blocking the others", async () => {
    const local = join(rt.dir, "local-skills");
    await mkdir(join(local, "lint"), { recursive: true });
    await writeFile(join(local, "lint", "SKILL.md"), "# Lint");
    const res = await put({
      sources: [
        { type: "git", source: join(rt.dir, "no-such-repo.git") },
        { type: "local", source: local },
        { type: "git", source: repo, subpath: "pack", skills: ["missing-skill"] },
      ],
    });
    expect(res.status).toBe(200);
    const etag = res.headers.get("etag");
    const s = await waitFor(async () => {
      const current = await status();
      return current.machines.every((m) => m.version === etag) ? current : null;
    }, "the configuration with a broken source");
    for (const m of s.machines) {
      expect(m.skills).toEqual(["lint"]);
      expect(m.errors.map((e) => e.source)).toEqual([`git:${join(rt.dir, "no-such-repo.git")}`, `git:${repo}/pack`]);
      expect(m.errors[1]!.error).toContain("missing-skill");
    }
    expect((await stat(join(mockSkills("m2"), "lint", "SKILL.md"))).isFile()).toBe(true);
  });
});

describe("concurrency and persistence", () => {
  it("answers a stale If-Match with 412 and keeps the newer document", async () => {
    const { headers } = await rt.api("/v1/config/skills");
    const etag = headers.get("etag")!;
    expect((await put({ sources: [] }, { "if-match": etag })).status).toBe(200);
    const stale = await put({ sources: [{ type: "local", source: "/tmp" }] }, { "if-match": etag });
    expect(stale.status).toBe(412);
    expect(errorCode(await problemOf(stale))).toBe("precondition_failed");
    expect(await (await rt.api("/v1/config/skills")).json()).toEqual({ sources: [] });
  });

  it("is the same document whichever machine path wrote it, and survives a restart of the runtime", async () => {
    const config = { sources: [{ type: "git", source: repo, subpath: "pack", skills: ["review"] }] };
    const res = await rt.api("/machines/m2/v1/config/skills", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(config) });
    expect(res.status).toBe(200);
    const etag = res.headers.get("etag");
    expect(await (await rt.api("/machines/m1/v1/config/skills")).json()).toEqual(config);

    await rt.restartWorker();
    const after = await rt.api("/v1/config/skills");
    expect(after.headers.get("etag")).toBe(etag);
    expect(await after.json()).toEqual(config);
    // The sidecars reconnect by themselves and apply it again on connect.
    await Promise.all([rt.sidecars.get("m1")!.connected(20_000), rt.sidecars.get("m2")!.connected(20_000)]);
    await waitFor(
      async () => (await status()).machines.every((m) => m.version === etag && m.skills.join() === "review"),
      "the configuration after the restart",
    );
    expect((await readdir(mockSkills("m1"))).sort()).toEqual(["my-own-skill", "review"]);
  });
});

describe("the apply itself", () => {
  async function applied(config: unknown): Promise<Status["machines"][number]> {
    const res = await put(config);
    expect(res.status).toBe(200);
    const etag = res.headers.get("etag");
    const s = await waitFor(async () => {
      const current = await status();
      return current.machines.every((m) => m.version === etag) ? current : null;
    }, "the configuration everywhere");
    return s.machines.find((m) => m.machine === "m1")!;
  }

  it("installs each good skill and reports each bad one on its own: a FIFO, a linked SKILL.md, a name the API refuses", async () => {
    const source = join(rt.dir, "hostile-skills");
    for (const dir of ["alpha", "fifo-skill", "link-skill", "-dash"]) await mkdir(join(source, dir), { recursive: true });
    await writeFile(join(source, "alpha", "SKILL.md"), "# Alpha");
    await writeFile(join(source, "fifo-skill", "SKILL.md"), "# Has a FIFO");
    execFileSync("mkfifo", [join(source, "fifo-skill", "pipe")]);
    await writeFile(join(rt.dir, "elsewhere.md"), "# Somewhere else");
    await symlink(join(rt.dir, "elsewhere.md"), join(source, "link-skill", "SKILL.md"));
    await writeFile(join(source, "-dash", "SKILL.md"), "# Dash");

    const m1 = await applied({ sources: [{ type: "local", source }] });
    expect(m1.skills).toEqual(["alpha"]);
    expect(m1.perAgent).toEqual({ mock: ["alpha"] });
    const text = m1.errors.map((e) => `${e.source}: ${e.error}`).join("\n");
    expect(text).toMatch(/skill fifo-skill: .*pipe is not a file or a folder/);
    expect(text).toContain("the SKILL.md of 'link-skill' is not a plain file");
    expect(text).toContain("'-dash' is not a valid skill name");
    // On disk: the good one, whole; the user's own folder; nothing half-copied, nothing staged.
    expect((await readdir(mockSkills("m1"))).sort()).toEqual(["alpha", "my-own-skill"]);
    expect(await readFile(join(mockSkills("m1"), "alpha", "SKILL.md"), "utf8")).toBe("# Alpha");

    // Emptying the configuration removes exactly what was installed, and complains about nothing.
    const empty = await applied({ sources: [] });
    expect(empty).toMatchObject({ skills: [], errors: [], perAgent: { mock: [] } });
    expect(await readdir(mockSkills("m1"))).toEqual(["my-own-skill"]);
  });

  it("names a root skill after its folder, even with a trailing slash; a ~ source holding the skills folder fails alone", async () => {
    const solo = join(rt.dir, "solo");
    await mkdir(solo, { recursive: true });
    await writeFile(join(solo, "SKILL.md"), "# Solo");
    await writeFile(join(homes.m1!, "SKILL.md"), "# A SKILL.md at HOME");
    const m1 = await applied({
      sources: [
        { type: "local", source: `${solo}/` },
        { type: "local", source: "~" },
      ],
    });
    expect(m1.skills).toContain("solo");
    expect(m1.skills).not.toContain("");
    expect(m1.errors.map((e) => e.error).join("\n")).toContain("holds the skills folder");
    expect((await readdir(mockSkills("m1"))).sort()).toEqual(["my-own-skill", "solo"]);
  });

  it("a reconnect with an unchanged configuration fetches and copies nothing", async () => {
    const m1 = await applied({ sources: [{ type: "git", source: repo, subpath: "pack", skills: ["review"] }] });
    const gitRuns = async () =>
      ((await (await rt.api("/machines/m1/v1/processes")).json()) as { processes: { label?: string }[] }).processes.filter((p) => p.label === "skills:git")
        .length;
    const before = await gitRuns();
    const sidecar = rt.sidecars.get("m1")!;
    const skipped = () => sidecar.logs().split("is applied already").length - 1;
    const skippedBefore = skipped();
    sidecar.child.kill("SIGUSR2"); // drop the tunnel: it reconnects and is handed the configuration again
    await sidecar.connected();
    await waitFor(async () => skipped() > skippedBefore, "the sidecar to skip the configuration it has");
    expect(await gitRuns()).toBe(before);
    const after = (await status()).machines.find((m) => m.machine === "m1")!;
    expect(after.appliedAtMs).toBe(m1.appliedAtMs);
  });
});
