/**
 * Trigger and schedule limits are counted per machine (SECURITY.md, "Tasks, schedules and GitHub triggers"):
 * a member scoped to one machine who fills its limit leaves other machines' members free to create theirs,
 * and the filled machine's admin sees what lies on it and removes some.
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_SCHEDULES_PER_MACHINE } from "@agent-runtime/protocol/schedules";
import { MAX_TRIGGERS_PER_MACHINE, TriggerRequest } from "@agent-runtime/protocol/triggers";
import { ScheduleRequest } from "@agent-runtime/protocol/schedules";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";
import type { TeamObject } from "./team";

function as(token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(`https://runtime.test${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } });
}

async function issue(body: Record<string, unknown>): Promise<string> {
  const res = await as(env.API_TOKEN, "/v1/tokens", { method: "POST", body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

const team = () => env.TEAM.get(env.TEAM.idFromName("team")) as DurableObjectStub<TeamObject>;
const task = (machine: string) => ({ machine, agent: "mock", cwd: "/srv/app", prompt: "go" });
const trigger = (machine: string) => ({
  kind: "github",
  secret: "whsec-0123456789abcdef",
  events: [{ on: "issues.labeled", label: "agent" }],
  task: task(machine),
});
const schedule = (machine: string) => ({ cron: "0 9 * * 1-5", task: task(machine) });

describe("limits per machine", () => {
  it("let one machine's member fill only that machine's triggers and schedules; its admin sees and removes them", async () => {
    for (const machine of ["limits-a", "limits-b"]) (await FakeSidecar.connect(machine)).drop();
    const memberA = await issue({ name: "member of a", role: "member", machines: ["limits-a"] });
    const memberB = await issue({ name: "member of b", role: "member", machines: ["limits-b"] });
    const adminA = await issue({ name: "admin of a", role: "admin", machines: ["limits-a"] });

    // Machine a's member fills its limits (the team object's own calls, as the routes make them).
    await runInDurableObject(team(), async (instance: TeamObject) => {
      for (let i = 0; i < MAX_TRIGGERS_PER_MACHINE; i++) expect(instance.createTrigger(TriggerRequest.parse(trigger("limits-a")), "member of a").ok).toBe(true);
      for (let i = 0; i < MAX_SCHEDULES_PER_MACHINE; i++)
        expect((await instance.createSchedule(ScheduleRequest.parse(schedule("limits-a")), "member of a")).ok).toBe(true);
    });
    const fullTrigger = await as(memberA, "/v1/triggers", { method: "POST", body: JSON.stringify(trigger("limits-a")) });
    expect(fullTrigger.status).toBe(409);
    expect(((await fullTrigger.json()) as { detail: string }).detail).toContain("machine 'limits-a' has 200 triggers");
    expect((await as(memberA, "/v1/schedules", { method: "POST", body: JSON.stringify(schedule("limits-a")) })).status).toBe(409);

    // Machine b's member is not held up by them.
    expect((await as(memberB, "/v1/triggers", { method: "POST", body: JSON.stringify(trigger("limits-b")) })).status).toBe(201);
    expect((await as(memberB, "/v1/schedules", { method: "POST", body: JSON.stringify(schedule("limits-b")) })).status).toBe(201);

    // Machine a's admin sees what lies on it (only it), and removes one of each: its member may create again.
    const triggers = ((await (await as(adminA, "/v1/triggers")).json()) as { triggers: { id: string; task: { machine: string } }[] }).triggers;
    expect(triggers).toHaveLength(MAX_TRIGGERS_PER_MACHINE);
    expect(new Set(triggers.map((t) => t.task.machine))).toEqual(new Set(["limits-a"]));
    const schedules = ((await (await as(adminA, "/v1/schedules")).json()) as { schedules: { id: string; task: { machine: string } }[] }).schedules;
    expect(schedules).toHaveLength(MAX_SCHEDULES_PER_MACHINE);
    expect((await as(adminA, `/v1/triggers/${triggers[0]!.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await as(adminA, `/v1/schedules/${schedules[0]!.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await as(memberA, "/v1/triggers", { method: "POST", body: JSON.stringify(trigger("limits-a")) })).status).toBe(201);
    expect((await as(memberA, "/v1/schedules", { method: "POST", body: JSON.stringify(schedule("limits-a")) })).status).toBe(201);
  });
});
