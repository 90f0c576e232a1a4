/**
 * The team's side of attempt groups in a real Durable Object's storage (docs/architecture.md, "Attempt
 * groups", "Lost reports"): reports may come twice or late when a machine says again what the team may
 * have missed, and count nothing twice nor move an attempt back; `unfinished` answers what a machine's
 * object reconciles against.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AttemptGroup, AttemptReport, UnfinishedAttempt } from "@agent-runtime/protocol/attempts";
import type { TeamObject } from "../team/team";
import { AttemptGroups } from "./attempt-groups";

const team = () => env.TEAM.get(env.TEAM.idFromName("attempt-groups-test")) as DurableObjectStub<TeamObject>;
const COMMIT = "a".repeat(40);

describe("attempt groups on the team's object", () => {
  it("take a report twice or late without counting twice or going back, and say what is unfinished on a machine", async () => {
    await runInDurableObject(team(), async (_, state) => {
      let tasks = 0;
      const groups = new AttemptGroups(state.storage, {
        base: async () => ({ ok: true, value: { branch: "main", commit: COMMIT } }),
        attemptCall: async () => ({ ok: true, value: { task: `task-${(tasks++).toString(16).padStart(16, "0")}-box`, state: "queued", startedAtMs: null } }),
        comment: async () => ({ ok: true, value: { posted: true, reason: null } }),
        waitUntil: () => {},
      });
      const started = await groups.start({ prompt: "race", cwd: "/srv/app", attempts: [{ agent: "mock" }, { agent: "mock" }] }, ["box", "box"], "tester", null);
      if (!started.ok) throw new Error(started.problem.detail);
      const id = started.value.id;
      const report = (n: number, patch: Partial<AttemptReport>): AttemptReport => ({
        ...{ group: id, n, task: started.value.attempts[n - 1]!.task, startedAtMs: 1000, endedAtMs: null },
        ...{ state: "running", check: null, changes: null, costUsd: null, error: null },
        ...patch,
      });
      const read = async () => {
        const got = await groups.handle({ op: "get", id });
        if (!got.ok) throw new Error(got.problem.detail);
        return got.value as AttemptGroup;
      };
      const unfinished = async (machine: string) => {
        const got = await groups.handle({ op: "unfinished", machine });
        if (!got.ok) throw new Error(got.problem.detail);
        return (got.value as { attempts: UnfinishedAttempt[] }).attempts.map((a) => [a.n, a.state]);
      };

      await groups.handle({ op: "report", report: report(1, { state: "checking", changes: { files: 2, added: 3, removed: 1 }, costUsd: 0.25 }) });
      // A `running` that arrives after `checking` (sent earlier, delivered late) is old news.
      await groups.handle({ op: "report", report: report(1, { state: "running" }) });
      expect((await read()).attempts[0]).toMatchObject({ state: "checking", costUsd: 0.25 });
      expect(await unfinished("box")).toEqual([
        [1, "checking"],
        [2, "queued"],
      ]);
      expect(await unfinished("elsewhere")).toEqual([]);

      // The end, said twice (the machine could not be sure the first landed): the same totals, once.
      const end = report(1, { state: "done", endedAtMs: 5000, changes: { files: 2, added: 3, removed: 1 }, costUsd: 0.75 });
      await groups.handle({ op: "report", report: end });
      await groups.handle({ op: "report", report: end });
      expect((await read()).attempts[0]).toMatchObject({ state: "done", verdict: "no_check", costUsd: 0.75, changes: { files: 2 }, durationMs: 4000 });
      expect(await unfinished("box")).toEqual([[2, "queued"]]);

      await groups.handle({ op: "report", report: report(2, { state: "failed", endedAtMs: 6000, error: "its machine holds no record of this attempt" }) });
      // A finished attempt is not changed again, whatever comes after.
      await groups.handle({ op: "report", report: report(2, { state: "done", endedAtMs: 7000 }) });
      const finished = await read();
      expect(finished.state).toBe("finished");
      expect(finished.attempts[1]).toMatchObject({ state: "failed", error: "its machine holds no record of this attempt" });
      expect(await unfinished("box")).toEqual([]);
    });
  });
});
