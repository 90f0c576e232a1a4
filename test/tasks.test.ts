/**
 * Tasks (docs/architecture.md, "Tasks"): a session the runtime starts and drives to the end of one prompt,
 * with the mock agent on a real sidecar. Its result (stop reason, last line, changes); its own policy
 * answering for it; waiting on a person, then cancelled; queued while the machine is away and run once,
 * in order, when it is back (a cancelled one never); past its deadline, timed out; refused as it should be.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

type Task = {
  id: string;
  machine: string;
  state: string;
  session: string | null;
  title: string;
  result: { stopReason: string | null; lastMessage: string | null; changes: { files: number } | null; branch: string | null; error: string | null } | null;
};

let rt: Runtime;
beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"], vars: { RECONNECT_GRACE_MS: "1000" } });
});
afterAll(async () => {
  await rt?.dispose();
});

const submit = (body: Record<string, unknown>, token?: string) =>
  rt.api("/v1/tasks", {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ machine: "local", agent: "mock", cwd: rt.dir, ...body }),
  });
const read = async (id: string) => (await (await rt.api(`/v1/tasks/${id}`)).json()) as Task;
const until = (id: string, states: string[], timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const task = await read(id);
      return states.includes(task.state) ? task : null;
    },
    `task ${id} to be ${states.join(" or ")}`,
    timeoutMs,
  );

describe("tasks", () => {
  it("run a prompt to its end and say what came of it", async () => {
    const created = await submit({ prompt: "/write task-notes.txt written by a task" });
    expect(created.status, await created.clone().text()).toBe(201);
    const task = (await created.json()) as Task;
    expect(task.id).toMatch(/^task-[0-9a-f]{16}-local$/);
    expect(["queued", "running"]).toContain(task.state);
    const done = await until(task.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({
      state: "succeeded",
      result: { stopReason: "end_turn", lastMessage: "Wrote task-notes.txt", changes: { files: 1 }, error: null },
    });
    expect(readFileSync(join(rt.dir, "task-notes.txt"), "utf8")).toBe("written by a task\n");
    // Its session is a session like any other: its transcript has the turn.
    const entries = ((await (await rt.api(`/v1/sessions/${done.session}/transcript`)).json()) as { entries: { kind: string }[] }).entries;
    expect(entries.map((e) => e.kind)).toContain("stop");
    const listed = (await (await rt.api("/v1/tasks?state=succeeded")).json()) as { tasks: Task[] };
    expect(listed.tasks.map((t) => t.id)).toContain(task.id);
  });

  it("work under their own policy, with no person asked", async () => {
    const policy = { rules: [{ name: "no shells", match: { kinds: ["execute"] }, decision: "deny" }] };
    const task = (await (await submit({ prompt: "/permission execute rm -rf ~", policy })).json()) as Task;
    const done = await until(task.id, ["succeeded", "failed"]);
    expect(done.result).toMatchObject({ stopReason: "end_turn", lastMessage: "Permission denied: Run rm -rf ~" });
  });

  it("wait for a person when the policy says ask, and end when cancelled", async () => {
    const task = (await (await submit({ prompt: "/permission read /etc/hosts", notify: false })).json()) as Task;
    await until(task.id, ["waiting"]);
    const cancelled = await rt.api(`/v1/tasks/${task.id}/cancel`, { method: "POST" });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ state: "cancelled" });
    // Its turn was cancelled at the agent: the session stops running.
    await waitFor(async () => {
      const session = (await (await rt.api(`/v1/sessions/${task.session ?? (await read(task.id)).session}`)).json()) as { state: string };
      return session.state !== "running" && session.state !== "waiting";
    }, "the session's turn to end");
    expect((await read(task.id)).state).toBe("cancelled");
  });

  it("wait for a machine that is away, then run once each, in order; a cancelled one never runs", async () => {
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await waitFor(async () => {
      const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; connected: boolean }[] };
      return machines.machines.find((m) => m.id === "local")?.connected === false;
    }, "the machine to be away");
    const first = (await (await submit({ prompt: "/write queued-1.txt one" })).json()) as Task;
    const second = (await (await submit({ prompt: "/write queued-2.txt two" })).json()) as Task;
    const third = (await (await submit({ prompt: "/write never.txt never" })).json()) as Task;
    expect([first.state, second.state, third.state]).toEqual(["queued", "queued", "queued"]);
    expect((await (await rt.api(`/v1/tasks/${third.id}/cancel`, { method: "POST" })).json()) as Task).toMatchObject({ state: "cancelled" });

    await rt.addSidecar("local");
    const [a, b] = [await until(first.id, ["succeeded", "failed"]), await until(second.id, ["succeeded", "failed"])];
    expect([a.state, b.state]).toEqual(["succeeded", "succeeded"]);
    expect(readFileSync(join(rt.dir, "queued-1.txt"), "utf8")).toBe("one\n");
    expect(readFileSync(join(rt.dir, "queued-2.txt"), "utf8")).toBe("two\n");
    const never = await read(third.id);
    expect(never).toMatchObject({ state: "cancelled", session: null });
    expect(existsSync(join(rt.dir, "never.txt"))).toBe(false);
  });

  it("cancelled while their agent starts, never send their prompt", async () => {
    const task = (await (await submit({ prompt: "/write cancelled-early.txt never written" })).json()) as Task;
    const cancelled = await rt.api(`/v1/tasks/${task.id}/cancel`, { method: "POST" });
    expect(await cancelled.json()).toMatchObject({ state: "cancelled" });
    // Its agent started (the cancel came first) and is stopped again once its session is open: then it is over.
    await waitFor(async () => {
      const servers = ((await (await rt.api("/v1/acp")).json()) as { servers: { serverId: string }[] }).servers;
      return (await read(task.id)).session !== null && !servers.some((s) => s.serverId === task.id);
    }, "the task's agent to be stopped");
    expect(await read(task.id)).toMatchObject({ state: "cancelled" });
    expect(existsSync(join(rt.dir, "cancelled-early.txt"))).toBe(false);
  });

  it("time out past their deadline", async () => {
    const task = (await (await submit({ prompt: "/slow 1000 100", deadlineSeconds: 10 })).json()) as Task;
    const done = await until(task.id, ["timed_out", "succeeded", "failed"], 30_000);
    expect(done.state).toBe("timed_out");
    expect(done.result?.error).toContain("deadline");
  });

  it("refuse what they should", async () => {
    const missing = await submit({ agent: undefined });
    expect(missing.status).toBe(400);
    const nowhere = await submit({ machine: "nowhere" });
    expect(nowhere.status).toBe(404);
    expect(errorCode(await problemOf(nowhere))).toBe("not_found");
    const badId = await rt.api("/v1/tasks/task-nope");
    expect(badId.status).toBe(400);
    const unknown = await rt.api("/v1/tasks/task-0123456789abcdef-local");
    expect(unknown.status).toBe(404);
    const issued = (await (
      await rt.api("/v1/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "watcher", role: "viewer" }) })
    ).json()) as { token: string };
    const refused = await submit({ prompt: "hello" }, issued.token);
    expect(refused.status).toBe(403);
    expect((await rt.api("/v1/tasks", { headers: { authorization: `Bearer ${issued.token}` } })).status).toBe(200);
  });
});
