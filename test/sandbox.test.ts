/**
 * Sandboxes end to end on real bubblewrap (docs/architecture.md, "Sandboxes"): a sidecar whose owner set
 * `workspace` and an allowlist naming one 127.0.0.1 port; the mock agent, acting on its own (`/sh`,
 * `/fetch`), cannot read a planted key or the sidecar's credentials, cannot write outside its folder or
 * into `.git/hooks`, reaches the listed port and not another; each refusal is in the transcript and the
 * audit log; all the same after the sidecar is killed outright and the session resumed. The owner's
 * `--deny` and `--roots` refuse with their problems, and a machine without bubblewrap refuses a sandboxed
 * session with the install hint.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIDECAR_BUNDLE } from "../dev/runtime";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
let home: string;
let work: string;
let listed = 0;
let unlisted = 0;
const servers: Server[] = [];
let nextId = 1;

function serve(text: string): Promise<number> {
  return new Promise((ok) => {
    const server = createServer((_req, res) => res.end(text)).listen(0, "127.0.0.1", () => ok((server.address() as { port: number }).port));
    servers.push(server);
  });
}

beforeAll(async () => {
  rt = await startRuntime({ machines: [] });
  home = join(rt.dir, "home");
  work = join(rt.dir, "work");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PLANTED-PRIVATE-KEY\n");
  mkdirSync(join(home, ".config", "agent-runtime"), { recursive: true });
  writeFileSync(join(home, ".config", "agent-runtime", "credentials.json"), '{"token":"PLANTED-MACHINE-TOKEN"}\n', { mode: 0o600 });
  mkdirSync(work);
  execFileSync("git", ["init", "-q", work]);
  listed = await serve("the listed server");
  unlisted = await serve("the unlisted server");
}, 60_000);

afterAll(async () => {
  for (const s of servers) s.close();
  await rt?.dispose();
});

const ownerEnv = () => ({
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  AGENT_RUNTIME_SANDBOX: "workspace",
  AGENT_RUNTIME_ALLOW_NETWORK: `127.0.0.1:${listed}`,
});

type Entry = { seq: number; kind: string; text?: string; data?: Record<string, unknown> };

async function post(serverId: string, method: string, params: unknown, query = "", machine = "local"): Promise<Response> {
  const path = machine === "local" ? "" : `/machines/${machine}`;
  return rt.api(`${path}/v1/acp/${serverId}${query}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
  });
}

async function recordOf(sessionId: string): Promise<string> {
  const list = (await (await rt.api("/v1/sessions?limit=50")).json()) as { sessions: { id: string; sessionId: string }[] };
  return list.sessions.find((s) => s.sessionId === sessionId)!.id;
}

async function transcript(record: string): Promise<Entry[]> {
  return ((await (await rt.api(`/v1/sessions/${record}/transcript?limit=1000`)).json()) as { entries: Entry[] }).entries;
}

/** One turn; what the agent said in it (the text after its prompt). */
async function turn(serverId: string, sessionId: string, text: string): Promise<string> {
  const res = await post(serverId, "session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  expect(res.status, await res.clone().text()).toBe(200);
  const record = await recordOf(sessionId);
  const entries = await transcript(record);
  const at = entries.findLastIndex((e) => e.kind === "prompt" && e.text === text);
  return entries
    .slice(at + 1)
    .filter((e) => e.kind === "text")
    .map((e) => e.text)
    .join("");
}

/** What the agent must not do fails, what it may do works. */
async function checkWalls(serverId: string, sessionId: string, round: string): Promise<void> {
  expect(await turn(serverId, sessionId, `/sh cat ~/.ssh/id_ed25519 # ${round}`)).toMatch(/exit code 1[\s\S]*Permission denied/);
  const creds = await turn(serverId, sessionId, `/sh cat ${join(home, ".config", "agent-runtime", "credentials.json")} # ${round}`);
  expect(creds).toContain("exit code 1");
  expect(creds).not.toContain("PLANTED-MACHINE-TOKEN");
  const data = await turn(serverId, sessionId, `/sh ls ${join(rt.dir, "data-local")} # ${round}`);
  expect(data).toMatch(/exit code 2[\s\S]*Permission denied/);
  expect(await turn(serverId, sessionId, `/sh echo ${round} > inside-${round}.txt`)).toContain("exit code 0");
  expect(readFileSync(join(work, `inside-${round}.txt`), "utf8")).toBe(`${round}\n`);
  expect(await turn(serverId, sessionId, `/sh echo x > ${join(rt.dir, `outside-${round}.txt`)}`)).toContain("Read-only file system");
  expect(existsSync(join(rt.dir, `outside-${round}.txt`))).toBe(false);
  expect(await turn(serverId, sessionId, `/sh echo x > .git/hooks/post-checkout # ${round}`)).toContain("Read-only file system");
  expect(existsSync(join(work, ".git", "hooks", "post-checkout"))).toBe(false);
  expect(await turn(serverId, sessionId, `/fetch http://127.0.0.1:${listed}/${round}`)).toContain("status 200: the listed server");
  expect(await turn(serverId, sessionId, `/fetch http://127.0.0.1:${unlisted}/${round}`)).toContain("status 403");
}

describe("an owner's workspace floor with one loopback port allowed", () => {
  it("holds for a mock session, shows each refusal, and holds again after the sidecar is killed and the session resumed", { timeout: 180_000 }, async () => {
    await rt.addSidecar("local", ownerEnv());
    const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; sandbox: Record<string, unknown> | null }[] };
    expect(machines.machines.find((m) => m.id === "local")!.sandbox).toMatchObject({
      platform: "linux-bwrap",
      enforceable: ["read-only", "workspace", "full"],
      missing: null,
      floor: { profile: "workspace", network: { mode: "allowlist", allow: [`127.0.0.1:${listed}`] } },
    });

    // Someone away hears of refusals by webhook.
    const hooks: { event: string; sandbox?: { target: string }; text: string }[] = [];
    const hookServer = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        hooks.push(JSON.parse(body));
        res.end();
      });
    });
    servers.push(hookServer);
    const hookPort = await new Promise<number>((ok) => hookServer.listen(0, "127.0.0.1", () => ok((hookServer.address() as { port: number }).port)));
    const subscribed = await rt.api("/v1/notifications/subscriptions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "webhook", url: `http://127.0.0.1:${hookPort}/hook`, secret: "whsec-0123456789abcdef", events: ["sandbox.blocked"] }),
    });
    expect(subscribed.status, await subscribed.clone().text()).toBe(201);

    // `status` says the same on the machine itself.
    const status = execFileSync(process.execPath, [SIDECAR_BUNDLE, "status", "--data-dir", join(rt.dir, "data-local")], {
      env: { ...process.env, ...ownerEnv() },
    }).toString();
    expect(status).toContain("sandbox:    linux-bwrap; can enforce read-only, workspace, full");
    expect(status).toContain(`floor:      workspace, network allowlist 127.0.0.1:${listed}`);
    expect(status).toContain("denied:     nothing");

    expect((await post("walls", "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock")).status).toBe(200);
    const created = (await (await post("walls", "session/new", { cwd: work, mcpServers: [] })).json()) as { result: { sessionId: string } };
    const sessionId = created.result.sessionId;
    await checkWalls("walls", sessionId, "first");

    const record = await recordOf(sessionId);
    const blocks = async () => (await transcript(record)).filter((e) => e.kind === "sandbox");
    expect((await blocks()).map((e) => e.data?.target)).toEqual([`GET 127.0.0.1:${unlisted}`]);
    const audited = async () => {
      const page = (await (await rt.api("/v1/audit?limit=200")).json()) as { entries: { token: string; method: string; route: string; status: number }[] };
      return page.entries.filter((e) => e.method === "SANDBOX");
    };
    const first = await waitFor(async () => (await audited()).length === 1 && (await audited()), "the refusal in the audit log");
    expect(first[0]).toMatchObject({ token: "sandbox", status: 403 });
    expect(first[0]!.route).toContain(`127.0.0.1:${unlisted}`);
    expect(first[0]!.route).toContain(record);

    const told = await waitFor(async () => hooks.length > 0 && hooks, "the sandbox.blocked webhook", 15_000);
    expect(told[0]).toMatchObject({ event: "sandbox.blocked", sandbox: { target: `GET 127.0.0.1:${unlisted}` } });
    expect(told[0]!.text).toContain("sandbox refused");

    // Killed outright: the next prompt brings the agent back (acp.restore), inside the same walls.
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await rt.addSidecar("local", ownerEnv());
    await checkWalls("walls", sessionId, "second");
    expect((await blocks()).length).toBe(2);
    await waitFor(async () => (await audited()).length === 2, "the second refusal in the audit log");
  });
});

describe("previews of an app served inside a sandbox", () => {
  it("reach the agent's app on the sandbox's own loopback, which the machine's loopback does not have", { timeout: 60_000 }, async () => {
    const port = await new Promise<number>((ok) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => ok(port));
      });
    });
    await rt.addSidecar("previewing", { ...ownerEnv(), AGENT_RUNTIME_ALLOW_NETWORK: "none", AGENT_RUNTIME_EXPOSE_PORTS: String(port) });
    expect((await post("served", "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock", "previewing")).status).toBe(200);
    const created = (await (await post("served", "session/new", { cwd: work, mcpServers: [] }, "", "previewing")).json()) as { result: { sessionId: string } };
    const prompt = await post(
      "served",
      "session/prompt",
      { sessionId: created.result.sessionId, prompt: [{ type: "text", text: `/serve ${port}` }] },
      "",
      "previewing",
    );
    expect(prompt.status).toBe(200);
    const opened = await rt.api(`/machines/previewing/v1/ports/${port}/preview`, { method: "POST" });
    expect(opened.status).toBe(201);
    const { url } = (await opened.json()) as { url: string };
    const body = await waitFor(async () => {
      const res = await fetch(url);
      return res.status === 200 && (await res.text());
    }, "the app inside the sandbox through the preview");
    expect(body).toBe("served by the mock agent's app");
    // Not on the machine's loopback: the app is inside the sandbox's network namespace.
    const direct = await new Promise<string>((ok) => {
      const socket = connect(port, "127.0.0.1");
      socket.on("connect", () => ok("connected")).on("error", (err: NodeJS.ErrnoException) => ok(err.code ?? "error"));
    });
    expect(direct).toBe("ECONNREFUSED");
  });
});

describe("what the owner switched off or fenced in", () => {
  it("refuses a terminal with --deny terminal and a folder outside --roots, naming the flag", { timeout: 60_000 }, async () => {
    const roots = join(rt.dir, "roots-only");
    mkdirSync(join(roots, "project"), { recursive: true });
    await rt.addSidecar("fenced", { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), AGENT_RUNTIME_DENY: "terminal", AGENT_RUNTIME_ROOTS: roots });
    const spawn = (body: unknown) =>
      rt.api("/machines/fenced/v1/processes", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

    const terminal = await spawn({ command: "sh", tty: true, interactive: true, cwd: roots });
    expect(terminal.status).toBe(403);
    const denied = await problemOf(terminal);
    expect(errorCode(denied)).toBe("permission_denied");
    expect(denied.detail).toContain("--deny terminal");

    // A plain process in a root is fine; the same outside the roots is not.
    const inside = await spawn({ command: "true", cwd: join(roots, "project") });
    expect(inside.status).toBe(201);
    const outside = await spawn({ command: "true", cwd: work });
    expect(outside.status).toBe(403);
    expect((await problemOf(outside)).detail).toContain("--roots");

    // A session's folder, the file routes and the git routes are fenced the same way.
    expect((await post("fenced-in", "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock", "fenced")).status).toBe(200);
    const outsideSession = await post("fenced-in", "session/new", { cwd: work, mcpServers: [] }, "", "fenced");
    expect(outsideSession.status).toBe(403);
    expect((await problemOf(outsideSession)).detail).toContain("--roots");
    const insideSession = await post("fenced-in", "session/new", { cwd: join(roots, "project"), mcpServers: [] }, "", "fenced");
    expect(insideSession.status).toBe(200);
    const file = await rt.api(`/machines/fenced/v1/fs/file?path=${encodeURIComponent(join(home, ".ssh", "id_ed25519"))}`);
    expect(file.status).toBe(403);
    expect((await problemOf(file)).detail).toContain("--roots");
    // A symlink inside a root that leads out is judged by where it leads.
    symlinkSync(work, join(roots, "way-out"));
    const git = await rt.api(`/machines/fenced/v1/git/status?cwd=${encodeURIComponent(join(roots, "way-out"))}`);
    expect(git.status).toBe(403);
  });

  it("refuses a sandboxed session on a machine without bubblewrap, saying how to install it", { timeout: 60_000 }, async () => {
    // A PATH with what the sidecar uses, but no bwrap.
    const bin = join(rt.dir, "bin-without-bwrap");
    mkdirSync(bin);
    for (const tool of ["sh", "git", "socat", "grep", "ps"])
      symlinkSync(
        execFileSync("sh", ["-c", `command -v ${tool}`])
          .toString()
          .trim(),
        join(bin, tool),
      );
    await rt.addSidecar("bare", { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), PATH: bin, AGENT_RUNTIME_SANDBOX: "workspace" });
    const machines = (await (await rt.api("/v1/machines")).json()) as {
      machines: { id: string; sandbox: { enforceable: string[]; missing: string | null } | null }[];
    };
    const bare = machines.machines.find((m) => m.id === "bare")!.sandbox!;
    expect(bare.enforceable).toEqual(["full"]);
    expect(bare.missing).toContain("apt-get install bubblewrap");

    const res = await post("no-walls", "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock", "bare");
    expect(res.status).toBe(501);
    const problem = await problemOf(res);
    expect(errorCode(problem)).toBe("sandbox_unavailable");
    expect(problem.detail).toContain("bwrap was not found");
    expect(problem.detail).toContain("apt-get install bubblewrap");
    // Nor does an agent's configuration probe start it unsandboxed.
    const probed = (await (await rt.api("/machines/bare/v1/agents/mock?config=true&no_cache=true")).json()) as { configError: string | null };
    expect(probed.configError).toContain("bwrap was not found");
    // Nothing ran instead: no agent process was started for it.
    const processes = (await (await rt.api("/machines/bare/v1/processes")).json()) as { processes: { label?: string }[] };
    expect(processes.processes.filter((p) => p.label === "acp:no-walls" || p.label === "probe:mock")).toEqual([]);
  });
});
