/**
 * Schedules fire from the team object's alarm (docs/architecture.md, "Schedules"), run here with the
 * workers tier's helper. The schedule's machine is away, so each task it starts waits, queued: a run
 * skips while the last one is still going, and a schedule whose times passed while nothing ran (the
 * deployment down) runs once, then next at its next time.
 */
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Schedule } from "@agent-runtime/protocol/schedules";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";
import type { TeamObject } from "../team/team";

const api = (path: string, init: RequestInit = {}) =>
  SELF.fetch(`https://runtime.test${path}`, {
    ...init,
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json", ...(init.headers ?? {}) },
  });

const team = () => env.TEAM.get(env.TEAM.idFromName("team")) as DurableObjectStub<TeamObject>;

/** Make every schedule due `agoMs` ago, as if its time came while nothing ran. */
const dueSince = (agoMs: number) =>
  runInDurableObject(team(), (_, state) => {
    state.storage.sql.exec(`UPDATE schedules SET next_run_at = ?`, Date.now() - agoMs);
  });

const read = async (id: string) => (await (await api(`/v1/schedules/${id}`)).json()) as Schedule;

describe("schedules", () => {
  it("fire from the team's alarm, skip while the last run is going, and run once after downtime", async () => {
    const machine = "scheduled";
    (await FakeSidecar.connect(machine)).drop(); // known to the team, and away: tasks wait for it
    const task = { machine, agent: "mock", cwd: "/srv/app", prompt: "run the nightly checks", deadlineSeconds: 600 };

    expect((await api("/v1/schedules", { method: "POST", body: JSON.stringify({ cron: "every day", task }) })).status).toBe(400);
    expect((await api("/v1/schedules", { method: "POST", body: JSON.stringify({ cron: "0 9 * * 1-5", timezone: "Mars/Olympus", task }) })).status).toBe(400);
    const unknown = await api("/v1/schedules", { method: "POST", body: JSON.stringify({ cron: "0 9 * * 1-5", task: { ...task, machine: "nowhere" } }) });
    expect(unknown.status).toBe(404);

    const created = await api("/v1/schedules", { method: "POST", body: JSON.stringify({ cron: "*/5 * * * *", timezone: "Europe/Paris", task }) });
    expect(created.status, await created.clone().text()).toBe(201);
    const schedule = (await created.json()) as Schedule;
    expect(schedule).toMatchObject({ cron: "*/5 * * * *", timezone: "Europe/Paris", paused: false, runs: [] });
    expect(schedule.nextRunAtMs! - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(new Date(schedule.nextRunAtMs!).getUTCMinutes() % 5).toBe(0);

    // Its time comes: a task is started on its machine, and waits for it.
    await dueSince(1000);
    expect(await runDurableObjectAlarm(team())).toBe(true);
    const first = await read(schedule.id);
    expect(first.runs).toHaveLength(1);
    const started = first.runs[0]!.task!;
    expect(started).toMatch(/^task-[0-9a-f]{16}-scheduled$/);
    const queued = (await (await api(`/v1/tasks/${started}`)).json()) as { state: string; createdBy: string };
    expect(queued).toMatchObject({ state: "queued", createdBy: `schedule ${schedule.id} of API_TOKEN` });
    expect(first.nextRunAtMs!).toBeGreaterThan(Date.now());

    // Its next time comes while that task still waits: skipped, and said.
    await dueSince(1000);
    expect(await runDurableObjectAlarm(team())).toBe(true);
    const second = await read(schedule.id);
    expect(second.runs[0]).toMatchObject({ task: null, skipped: `the last run (${started}) is still going` });

    // The deployment was down for three of its times: once the task ended, they are one run.
    expect((await api(`/v1/tasks/${started}/cancel`, { method: "POST" })).status).toBe(200);
    await dueSince(15 * 60_000 + 1000);
    expect(await runDurableObjectAlarm(team())).toBe(true);
    const third = await read(schedule.id);
    expect(third.runs).toHaveLength(3);
    expect(third.runs[0]!.task).toMatch(/^task-/);
    expect(third.runs[0]!.task).not.toBe(started);
    expect(third.nextRunAtMs!).toBeGreaterThan(Date.now());

    // Paused, it has no next run; resumed, its next time from now; deleted, it is gone.
    const paused = await api(`/v1/schedules/${schedule.id}`, { method: "PATCH", body: JSON.stringify({ paused: true }) });
    expect(await paused.json()).toMatchObject({ paused: true, nextRunAtMs: null });
    const resumed = (await (await api(`/v1/schedules/${schedule.id}`, { method: "PATCH", body: JSON.stringify({ paused: false }) })).json()) as Schedule;
    expect(resumed.nextRunAtMs!).toBeGreaterThan(Date.now());
    const listed = (await (await api("/v1/schedules")).json()) as { schedules: Schedule[] };
    expect(listed.schedules.map((s) => s.id)).toContain(schedule.id);
    expect((await api(`/v1/schedules/${schedule.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await api(`/v1/schedules/${schedule.id}`)).status).toBe(404);

    // One made paused has no next run until resumed.
    const asleep = await api("/v1/schedules", { method: "POST", body: JSON.stringify({ cron: "0 3 * * *", task, paused: true }) });
    expect(asleep.status, await asleep.clone().text()).toBe(201);
    expect(await asleep.json()).toMatchObject({ paused: true, nextRunAtMs: null });
  });
});
