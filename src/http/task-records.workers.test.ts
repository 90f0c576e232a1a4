/**
 * A schedule and a trigger are their task's machine's (http/task-records.ts, docs/architecture.md,
 * "Families of routes"): a member of another machine creates none there, and neither lists, reads nor
 * deletes one (as good as absent: 404); a member of that machine does all four.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { as, sidecarsPerTest } from "../../test/workers/requests";

const connect = sidecarsPerTest();

async function memberOf(machine: string): Promise<string> {
  const res = await as(env.API_TOKEN, "/v1/tokens", {
    method: "POST",
    body: JSON.stringify({ name: `member-of-${machine}`, role: "member", machines: [machine] }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

const task = (machine: string) => ({ machine, agent: "mock", cwd: "/srv/app", prompt: "run the checks" });
const requests = {
  schedules: (machine: string) => ({ cron: "0 3 * * *", task: task(machine), paused: true }),
  triggers: (machine: string) => ({
    kind: "github",
    secret: "whsec-0123456789abcdef",
    events: [{ on: "issues.labeled", label: "agent" }],
    task: task(machine),
  }),
};

describe("records kept for their task's machine", () => {
  for (const kind of ["schedules", "triggers"] as const) {
    it(`${kind}: only a member of the task's machine creates, lists, reads and deletes one`, async () => {
      const [a, b] = [`${kind}-a`, `${kind}-b`];
      await connect(a);
      await connect(b);
      const [ofA, ofB] = [await memberOf(a), await memberOf(b)];
      const listed = async (token: string) => ((await (await as(token, `/v1/${kind}`)).json()) as Record<string, { id: string }[]>)[kind]!.map((r) => r.id);

      expect((await as(ofB, `/v1/${kind}`, { method: "POST", body: JSON.stringify(requests[kind](a)) })).status).toBe(403);
      const created = await as(ofA, `/v1/${kind}`, { method: "POST", body: JSON.stringify(requests[kind](a)) });
      expect(created.status, await created.clone().text()).toBe(201);
      const { id } = (await created.json()) as { id: string };

      expect(await listed(ofA)).toContain(id);
      expect(await listed(ofB)).not.toContain(id);
      expect((await as(ofB, `/v1/${kind}/${id}`)).status).toBe(404);
      expect((await as(ofB, `/v1/${kind}/${id}`, { method: "DELETE" })).status).toBe(404);
      expect((await as(ofA, `/v1/${kind}/${id}`)).status).toBe(200);
      expect((await as(ofA, `/v1/${kind}/${id}`, { method: "DELETE" })).status).toBe(204);
      expect((await as(ofA, `/v1/${kind}/${id}`)).status).toBe(404);
    });
  }
});
