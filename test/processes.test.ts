/**
 * Processes through the worker and the real sidecar: spawn, exit codes, signals, logs and
 * follow, input, PTY, sorting, limits, and the agent processes the runtime starts itself.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, rpc } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type Proc = {
  id: string;
  command: string;
  args: string[];
  status: string;
  owner: string;
  exitCode?: number | null;
  signal?: string | null;
  exitedAtMs?: number | null;
  pid: number | null;
  tty: boolean;
  interactive: boolean;
  cwd: string;
  createdAtMs: number;
  label?: string;
};

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: [] });
  await rt.addSidecar("local", { AGENT_RUNTIME_MAX_PROCESSES: "150", AGENT_RUNTIME_MAX_LOG_BYTES: "4096", AGENT_RUNTIME_MAX_INPUT_BYTES: "1024" });
});
afterAll(async () => {
  await rt?.dispose();
});

async function spawn(body: Record<string, unknown>): Promise<Proc> {
  const res = await rt.api("/v1/processes", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`spawn answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Proc;
}

async function get(id: string): Promise<Proc> {
  return (await (await rt.api(`/v1/processes/${id}`)).json()) as Proc;
}

async function exited(id: string): Promise<Proc> {
  return waitFor(async () => {
    const p = await get(id);
    return p.status === "exited" ? p : null;
  }, `${id} to exit`);
}

async function logText(id: string, stream?: "stdout" | "stderr"): Promise<string> {
  const { entries } = (await (await rt.api(`/v1/processes/${id}/logs`)).json()) as { entries: { stream: string; data: string; sequence: number }[] };
  return entries
    .filter((e) => !stream || e.stream === stream)
    .map((e) => e.data)
    .join("");
}

function post(path: string, body?: unknown): Promise<Response> {
  return rt.api(path, { method: "POST", headers: { "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

describe("spawning and exit", () => {
  it("runs node and sh children without a shell in between, with every field of a process", async () => {
    const p = await spawn({ command: "node", args: ["-e", "console.log('out'); console.error('err'); process.exit(7)"], cwd: rt.dir });
    expect(p).toMatchObject({ command: "node", owner: "user", status: "running", tty: false, interactive: false, cwd: rt.dir });
    expect(p.id).toMatch(/^proc_\d+$/);
    expect(p.pid).toBeGreaterThan(0);
    const done = await exited(p.id);
    expect(done).toMatchObject({ status: "exited", exitCode: 7, signal: null });
    expect(done.exitedAtMs).toBeGreaterThanOrEqual(done.createdAtMs);
    expect(await logText(p.id, "stdout")).toBe("out\n");
    expect(await logText(p.id, "stderr")).toBe("err\n");

    // Arguments are passed as they are: shell metacharacters are text, not commands.
    const literal = await spawn({ command: "node", args: ["-e", "console.log(process.argv[1])", "$(touch /tmp/pwned); `id` | x"] });
    await exited(literal.id);
    expect(await logText(literal.id)).toBe("$(touch /tmp/pwned); `id` | x\n");

    const sh = await spawn({ command: "sh", args: ["-c", "echo $GREETING; exit 3"], env: { GREETING: "hi there" } });
    expect(await exited(sh.id)).toMatchObject({ exitCode: 3 });
    expect(await logText(sh.id)).toBe("hi there\n");
  });

  it("reports a child that dies on its own within a second", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "sleep 0.2; kill -9 $$"] });
    const started = Date.now();
    const done = await exited(p.id);
    expect(done).toMatchObject({ exitCode: null, signal: "SIGKILL" });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("refuses a missing command (404), a bad cwd (404) and a bad body (400), and stays up", async () => {
    const missing = await post("/v1/processes", { command: "definitely-not-a-command-xyz" });
    expect(missing.status).toBe(404);
    expect((await problemOf(missing)).detail).toContain("was not found");
    const badCwd = await post("/v1/processes", { command: "true", cwd: "/no/such/dir" });
    expect(badCwd.status).toBe(404);
    const noCommand = await post("/v1/processes", { args: ["x"] });
    expect(noCommand.status).toBe(400);
    expect((await problemOf(noCommand)).detail).toContain("command");
    const wrongType = await post("/v1/processes", { command: "true", args: "not-an-array" });
    expect(wrongType.status).toBe(400);
    expect((await rt.api("/v1/processes")).status).toBe(200);
  });

  it("answers 404 for an unknown process", async () => {
    const res = await rt.api("/v1/processes/proc_999999999");
    expect(res.status).toBe(404);
    expect(errorCode(await problemOf(res))).toBe("not_found");
  });
});

describe("signals and deletion", () => {
  it("stop sends SIGTERM and answers with the exited state; DELETE forgets it (409 while running)", async () => {
    const p = await spawn({ command: "sleep", args: ["30"] });
    const busy = await rt.api(`/v1/processes/${p.id}`, { method: "DELETE" });
    expect(busy.status).toBe(409);
    const stopped = (await (await post(`/v1/processes/${p.id}/stop`)).json()) as Proc;
    expect(stopped).toMatchObject({ status: "exited", signal: "SIGTERM", exitCode: null });
    expect((await rt.api(`/v1/processes/${p.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await rt.api(`/v1/processes/${p.id}`)).status).toBe(404);
  });

  it("kill sends SIGKILL, even to a process that ignores SIGTERM", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "trap '' TERM; echo ready; sleep 30"] });
    await waitFor(async () => (await logText(p.id)).includes("ready"), "the trap to be set");
    const killed = (await (await post(`/v1/processes/${p.id}/kill`)).json()) as Proc;
    expect(killed).toMatchObject({ status: "exited", signal: "SIGKILL" });
  });
});

describe("logs and input", () => {
  it("follows logs as SSE until the process exits, with sequence numbers", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "for i in 1 2 3; do echo line $i; sleep 0.1; done"] });
    const events = await readSse(rt, "", { path: `/v1/processes/${p.id}/logs?follow=true`, untilEnd: true });
    const messages = events.filter((e) => e.event === "log"); // the event the sandbox-agent SDK listens to
    expect(messages.map((e) => (e.data as { data: string }).data).join("")).toBe("line 1\nline 2\nline 3\n");
    expect(messages.map((e) => e.id)).toEqual(messages.map((_, i) => i + 1));
    expect(messages.map((e) => (e.data as { sequence: number }).sequence)).toEqual(messages.map((e) => e.id));
    expect(events.at(-1)).toMatchObject({ event: "end", data: { id: p.id, exitCode: 0 } });
    // Logs of an exited process still follow: the whole log, then the end.
    const replay = await readSse(rt, "", { path: `/v1/processes/${p.id}/logs?follow=true`, untilEnd: true, lastEventId: 1 });
    expect(replay.filter((e) => e.event === "log").map((e) => e.id)).toEqual(messages.slice(1).map((e) => e.id));
  });

  it("feeds an interactive process's stdin, and refuses input to a non-interactive one", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "read name; echo hello $name"], interactive: true });
    const written = await post(`/v1/processes/${p.id}/input`, { data: "world\n", encoding: "utf8" });
    expect(await written.json()).toEqual({ bytesWritten: 6 });
    expect(await exited(p.id)).toMatchObject({ exitCode: 0 });
    expect(await logText(p.id)).toBe("hello world\n");

    const b64 = await spawn({ command: "cat", interactive: true });
    await post(`/v1/processes/${b64.id}/input`, { data: Buffer.from("bytes\n").toString("base64"), encoding: "base64", eof: true });
    await exited(b64.id);
    expect(await logText(b64.id)).toBe("bytes\n");

    const closed = await spawn({ command: "sleep", args: ["5"] });
    const refused = await post(`/v1/processes/${closed.id}/input`, { data: "x" });
    expect(refused.status).toBe(409);
    await post(`/v1/processes/${closed.id}/kill`);
  });

  it("gives a tty process a real pseudo-terminal", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "test -t 0 && echo is-a-tty; read x; echo got $x"], tty: true, interactive: true });
    expect(p.tty).toBe(true);
    await waitFor(async () => (await logText(p.id)).includes("is-a-tty"), "the terminal check");
    await post(`/v1/processes/${p.id}/input`, { data: Buffer.from("abc\r").toString("base64") }); // base64 is the default
    expect(await exited(p.id)).toMatchObject({ exitCode: 0 });
    expect(await logText(p.id)).toContain("got abc");
    expect((await post("/v1/processes", { command: "no-such-command-abc", tty: true })).status).toBe(404);
  });
});

describe("logs as the sandbox-agent SDK reads them", () => {
  type Entry = { sequence: number; timestampMs: number; stream: string; encoding: string; data: string };
  const logs = async (id: string, query = "") =>
    (await (await rt.api(`/v1/processes/${id}/logs${query}`)).json()) as { processId: string; stream: string; entries: Entry[] };

  it("keeps binary output byte for byte (base64), and text as text even when a character spans two writes", async () => {
    const p = await spawn({
      command: "node",
      args: [
        "-e",
        "process.stdout.write(Buffer.from([0xff, 0x00, 0xfe])); const e = Buffer.from('é'); process.stdout.write(e.subarray(0, 1)); setTimeout(() => process.stdout.write(e.subarray(1)), 100)",
      ],
    });
    await exited(p.id);
    const { entries, processId } = await logs(p.id);
    expect(processId).toBe(p.id);
    const bytes = Buffer.concat(entries.map((e) => Buffer.from(e.data, e.encoding === "base64" ? "base64" : "utf8")));
    expect([...bytes]).toEqual([0xff, 0x00, 0xfe, 0xc3, 0xa9]);
    expect(entries.find((e) => e.encoding === "base64")).toBeDefined();
    expect(entries.filter((e) => e.encoding === "utf8").map((e) => e.data)).toContain("é");
    for (const e of entries) expect(e).toMatchObject({ stream: "stdout", sequence: expect.any(Number), timestampMs: expect.any(Number) });
  });

  it("filters by stream, keeps the last n with tail, and starts after since", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "echo o1; sleep 0.05; echo e1 >&2; sleep 0.05; echo o2; sleep 0.05; echo e2 >&2"] });
    await exited(p.id);
    const all = await logs(p.id);
    expect(all.stream).toBe("combined");
    // How the output falls into entries depends on when the sidecar read it (two lines may come as one
    // read on a busy machine): the filters are checked against the combined log, the text as a whole.
    const stderr = (await logs(p.id, "?stream=stderr")).entries;
    expect(stderr).toEqual(all.entries.filter((e) => e.stream === "stderr"));
    expect(stderr.map((e) => e.data).join("")).toBe("e1\ne2\n");
    const stdout = all.entries.filter((e) => e.stream === "stdout");
    expect(stdout.map((e) => e.data).join("")).toBe("o1\no2\n");
    expect((await logs(p.id, "?stream=stdout&tail=1")).entries).toEqual(stdout.slice(-1));
    const since = all.entries[1]!.sequence;
    expect((await logs(p.id, `?since=${since}`)).entries.map((e) => e.sequence)).toEqual(all.entries.slice(2).map((e) => e.sequence));
    expect((await rt.api(`/v1/processes/${p.id}/logs?stream=both`)).status).toBe(400);
  });

  it("resizes a terminal (the process sees the new size), and refuses a process without one", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "read x; stty size"], tty: true, interactive: true });
    const resized = await post(`/v1/processes/${p.id}/terminal/resize`, { cols: 91, rows: 33 });
    expect(resized.status).toBe(200);
    expect(await resized.json()).toEqual({ cols: 91, rows: 33 });
    await post(`/v1/processes/${p.id}/input`, { data: "go\r", encoding: "utf8" });
    await exited(p.id);
    expect(await logText(p.id)).toContain("33 91");
    const pipes = await spawn({ command: "sleep", args: ["5"] });
    const refused = await post(`/v1/processes/${pipes.id}/terminal/resize`, { cols: 80, rows: 24 });
    expect(refused.status).toBe(409);
    expect((await post(`/v1/processes/${pipes.id}/terminal/resize`, { cols: 0, rows: 24 })).status).toBe(400);
    await post(`/v1/processes/${pipes.id}/kill`);
  });

  it("reports a terminal's output as the pty stream", async () => {
    const p = await spawn({ command: "sh", args: ["-c", "echo on-a-terminal"], tty: true });
    await exited(p.id);
    expect((await logs(p.id, "?stream=pty")).entries.map((e) => e.data).join("")).toContain("on-a-terminal");
  });
});

describe("limits", () => {
  it("keeps at most AGENT_RUNTIME_MAX_LOG_BYTES of output, saying what was dropped", async () => {
    const p = await spawn({ command: "node", args: ["-e", "for (let i = 0; i < 100; i++) console.log(String(i).padStart(99, '.'))"] });
    await exited(p.id);
    const logs = (await (await rt.api(`/v1/processes/${p.id}/logs`)).json()) as { entries: { data: string }[]; droppedThrough: number };
    const kept = logs.entries.map((e) => e.data).join("");
    expect(kept.length).toBeLessThanOrEqual(4096);
    expect(kept.endsWith(`${"99".padStart(99, ".")}\n`)).toBe(true); // the newest output is kept
    expect(logs.droppedThrough).toBeGreaterThan(0);
  });

  it("refuses input over AGENT_RUNTIME_MAX_INPUT_BYTES with 413", async () => {
    const p = await spawn({ command: "cat", interactive: true });
    const res = await post(`/v1/processes/${p.id}/input`, { data: "x".repeat(2000), encoding: "utf8" });
    expect(res.status).toBe(413);
    expect(errorCode(await problemOf(res))).toBe("payload_too_large");
    await post(`/v1/processes/${p.id}/kill`);
  });

  it("refuses a process past AGENT_RUNTIME_MAX_PROCESSES with 429, and lists 100+ processes sorted by id", async () => {
    const started: Proc[] = [];
    for (let i = 0; i < 110; i++) started.push(await spawn({ command: "true" }));
    const { processes } = (await (await rt.api("/v1/processes")).json()) as { processes: Proc[] };
    const ids = processes.map((p) => p.id);
    expect(ids).toEqual([...ids].sort());
    expect(processes.map((p) => p.createdAtMs)).toEqual([...processes.map((p) => p.createdAtMs)].sort((a, b) => a - b));
    expect(ids).toEqual(expect.arrayContaining(started.map((p) => p.id)));

    const sleepers: Proc[] = [];
    let refused: Response | null = null;
    for (let i = 0; i < 160 && !refused; i++) {
      const res = await post("/v1/processes", { command: "sleep", args: ["30"] });
      if (res.status === 201) sleepers.push((await res.json()) as Proc);
      else refused = res;
    }
    expect(refused?.status).toBe(429);
    expect(errorCode(await problemOf(refused!))).toBe("too_many_processes");
    await Promise.all(sleepers.map((p) => post(`/v1/processes/${p.id}/kill`)));
  }, 90_000); // some 270 processes started one after another: about 10 s alone, three times that on two busy cores
});

describe("processes the runtime starts itself", () => {
  it("lists ACP agent processes with owner system while they run", async () => {
    expect((await rpc(rt, "sys", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=mock")).status).toBe(200);
    const { processes } = (await (await rt.api("/v1/processes")).json()) as { processes: Proc[] };
    expect(processes.find((p) => p.label === "acp:sys")).toMatchObject({ owner: "system", status: "running", interactive: true });
    await rt.api("/v1/acp/sys", { method: "DELETE" });
  });
});

describe("shutdown", () => {
  it("stops every child when the sidecar stops: no orphans", async () => {
    const own = await startRuntime({ machines: ["local"] });
    try {
      const res = await own.api("/v1/processes", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ command: "sh", args: ["-c", "trap '' TERM; sleep 300"] }),
      });
      const stubborn = (await res.json()) as Proc;
      const plain = (await (
        await own.api("/v1/processes", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ command: "sleep", args: ["300"] }),
        })
      ).json()) as Proc;
      expect((await rpc(own, "agent", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }, "?agent=mock")).status).toBe(200);
      const { processes } = (await (await own.api("/v1/processes")).json()) as { processes: Proc[] };
      const pids = processes.map((p) => p.pid!);
      expect(pids).toEqual(expect.arrayContaining([stubborn.pid, plain.pid]));
      expect(await own.sidecars.get("local")!.stop("SIGTERM")).toBe(0);
      for (const pid of pids) expect(alive(pid), `pid ${pid} outlived the sidecar`).toBe(false);
    } finally {
      await own.dispose();
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Live processes of a process group (Linux /proc). */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z") members.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return members;
}

describe("process groups", () => {
  it("kill stops the process and what it started, even when they ignore SIGTERM", async () => {
    const res = await rt.api("/v1/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "sh", args: ["-c", "trap '' TERM; sleep 300; echo never"] }),
    });
    const proc = (await res.json()) as Proc;
    await waitFor(async () => groupMembers(proc.pid!).length >= 2, "sh and its sleep");
    expect((await rt.api(`/v1/processes/${proc.id}/kill`, { method: "POST" })).status).toBe(200);
    await waitFor(async () => groupMembers(proc.pid!).length === 0, "the whole group to be gone");
  });

  it("a sidecar killed outright has the groups it left reaped by the next one, even those whose leader is gone", async () => {
    const own = await startRuntime({ machines: ["local"] });
    try {
      const res = await own.api("/v1/processes", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ command: "sh", args: ["-c", "sleep 301 & sleep 302"] }),
      });
      const proc = (await res.json()) as Proc;
      await waitFor(async () => groupMembers(proc.pid!).length >= 3, "sh and both sleeps");
      expect(await own.sidecars.get("local")!.stop("SIGKILL")).toBeNull();
      process.kill(proc.pid!, "SIGKILL"); // the leader dies too; its group lives on
      await waitFor(async () => groupMembers(proc.pid!).length === 2, "the leader gone, the sleeps still there");
      await own.addSidecar("local"); // same data folder: it reads what the killed one wrote down
      await waitFor(async () => groupMembers(proc.pid!).length === 0, "the next sidecar to reap the group");
    } finally {
      await own.dispose();
    }
  });
});

describe("a one-shot run", () => {
  type Run = {
    exitCode: number | null;
    signal: string | null;
    stdout: string;
    stderr: string;
    stdoutTruncated: boolean;
    stderrTruncated: boolean;
    timedOut: boolean;
    durationMs: number;
  };
  const run = async (body: unknown) => {
    const res = await rt.api("/v1/processes/run", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Run };
  };

  it("answers exit code, stdout and stderr apart, and the duration; the process is not left listed", async () => {
    const { status, body } = await run({ command: "sh", args: ["-c", "echo out; echo err >&2; exit 3"] });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      exitCode: 3,
      signal: null,
      stdout: "out\n",
      stderr: "err\n",
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
    });
    expect(body.durationMs).toBeGreaterThanOrEqual(0);
    const { processes } = (await (await rt.api("/v1/processes")).json()) as { processes: Proc[] };
    expect(processes.filter((p) => p.label === "run")).toEqual([]);
  });

  it("feeds stdin, and keeps binary-safe text", async () => {
    const { body } = await run({ command: "cat", stdin: "héllo\nwörld" });
    expect(body).toMatchObject({ exitCode: 0, stdout: "héllo\nwörld" });
  });

  it("stops the whole process group at timeoutMs and says so", async () => {
    const { body } = await run({ command: "sh", args: ["-c", "trap '' TERM; sleep 30; echo never"], timeoutMs: 300 });
    expect(body).toMatchObject({ timedOut: true, exitCode: null, stdout: "" });
    expect(body.durationMs).toBeLessThan(10_000);
  });

  it("keeps at most maxOutputBytes of each stream and flags the cut", async () => {
    const { body } = await run({
      command: "sh",
      args: ["-c", "head -c 5000 /dev/zero | tr '\\0' x; head -c 10 /dev/zero | tr '\\0' y >&2"],
      maxOutputBytes: 100,
    });
    expect(body.stdout).toBe("x".repeat(100));
    expect(body.stdoutTruncated).toBe(true);
    expect(body).toMatchObject({ stderr: "y".repeat(10), stderrTruncated: false, exitCode: 0 });
  });

  it("refuses bad input with a 4xx problem: a missing command, NUL in args, a timeout out of range", async () => {
    for (const [body, status] of [
      [{ command: "definitely-not-a-command-here" }, 404],
      [{ command: "ls", args: ["a\u0000b"] }, 400],
      [{ command: "ls", timeoutMs: 0 }, 400],
      [{ command: "ls", shell: true }, 400],
    ] as const) {
      const res = await rt.api("/v1/processes/run", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
  });
});

describe("the process limits of a machine", () => {
  it("are read and changed at run time through /v1/processes/config, and enforced", async () => {
    const get = async () => (await (await rt.api("/v1/processes/config")).json()) as Record<string, number>;
    const before = await get();
    expect(before).toMatchObject({ maxConcurrentProcesses: 150, maxLogBytesPerProcess: 4096, maxInputBytesPerRequest: 1024, defaultRunTimeoutMs: 60_000 });
    const set = (body: unknown) =>
      rt.api("/v1/processes/config", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const changed = await set({ maxOutputBytes: 8, defaultRunTimeoutMs: 500 });
    expect(changed.status).toBe(200);
    expect(await changed.json()).toMatchObject({ ...before, maxOutputBytes: 8, defaultRunTimeoutMs: 500 });
    expect(await get()).toMatchObject({ maxOutputBytes: 8, defaultRunTimeoutMs: 500 });

    const run = async (body: unknown) =>
      rt.api("/v1/processes/run", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const capped = (await (await run({ command: "sh", args: ["-c", "echo 0123456789; sleep 30"] })).json()) as {
      stdout: string;
      stdoutTruncated: boolean;
      timedOut: boolean;
    };
    expect(capped).toMatchObject({ stdout: "01234567", stdoutTruncated: true, timedOut: true }); // the new default cap and deadline
    expect((await run({ command: "true", maxOutputBytes: 9 })).status).toBe(400);
    expect((await set({ defaultRunTimeoutMs: 10, maxRunTimeoutMs: 5 })).status).toBe(400);
    expect((await set({ maxConcurrentProcesses: "many" })).status).toBe(400);
    expect((await set(before)).status).toBe(200);
    expect(await get()).toEqual(before);
  });

  it("filter the list by owner", async () => {
    const all = (await (await rt.api("/v1/processes")).json()) as { processes: Proc[] };
    const system = (await (await rt.api("/v1/processes?owner=system")).json()) as { processes: Proc[] };
    const user = (await (await rt.api("/v1/processes?owner=user")).json()) as { processes: Proc[] };
    expect(system.processes.every((p) => p.owner === "system")).toBe(true);
    expect(user.processes.every((p) => p.owner === "user")).toBe(true);
    expect(system.processes.length + user.processes.length).toBe(all.processes.length);
    expect(user.processes.length).toBeGreaterThan(0);
    expect((await rt.api("/v1/processes?owner=root")).status).toBe(400);
  });
});
