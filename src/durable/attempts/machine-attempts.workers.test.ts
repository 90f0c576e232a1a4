/**
 * A machine's attempts in a real Durable Object's storage (docs/architecture.md, "Attempt groups", "Lost
 * reports"): a report the team did not take is marked and rings the alarm; the alarm reconciles with the
 * team's record, says again what the team lacks, and stops once it landed. An attempt the team holds that
 * this machine has no record of is reported failed.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AttemptReport, AttemptRun, UnfinishedAttempt } from "@agent-runtime/protocol/attempts";
import type { Task } from "@agent-runtime/protocol/tasks";
import type { MachineObject } from "../machine/machine";
import { MachineAttempts } from "./machine-attempts";

const machine = () => env.MACHINE.get(env.MACHINE.idFromName("attempts-outbox")) as DurableObjectStub<MachineObject>;
const GROUP = "grp-0123456789ab";
const TASK = "task-00000000000000aa-attempts-outbox";

const task = (state: Task["state"]): Task => ({
  ...{ id: TASK, machine: "attempts-outbox", agent: "mock", cwd: "/srv/app", title: "race", state, session: null, createdBy: "tester" },
  ...{ createdAtMs: 1000, startedAtMs: state === "queued" ? null : 2000, endedAtMs: null, deadlineSeconds: 600, worktree: true, origin: "task", result: null },
});

describe("a machine's attempts", () => {
  it("keep a report the team did not take, and say it again when the alarm reconciles", async () => {
    await runInDurableObject(machine(), async (_, state) => {
      const sent: AttemptReport[] = [];
      const wakes: number[] = [];
      const background: Promise<unknown>[] = [];
      let teamDown = true;
      let held: UnfinishedAttempt[] = [];
      const attempts = new MachineAttempts(state.storage, {
        machine: () => "attempts-outbox",
        tasks: async (call) => ({ ok: true, value: task(call.op === "submit" ? "queued" : "running") }),
        session: () => null,
        call: async () => ({ ok: false, problem: { code: "machine_offline", detail: "not in this test" } }),
        report: async (report) => {
          if (teamDown) throw new Error("the team's object is unreachable");
          sent.push(report);
        },
        unfinished: async () => {
          if (teamDown) throw new Error("the team's object is unreachable");
          return held;
        },
        reachable: () => true,
        wake: (at) => wakes.push(at),
        waitUntil: (work) => void background.push(work),
      });
      const run: AttemptRun = {
        ...{ group: GROUP, n: 1, agent: "mock", cwd: "/srv/app", prompt: "race", branch: `agent/${GROUP}-1-mock` },
        ...{ base: { branch: "main", commit: "a".repeat(40), agreedOn: "attempts-outbox" }, check: null, deadlineSeconds: 600 },
        ...{ policy: null, who: "tester", origin: "task" as const },
      };
      expect(await attempts.handle({ op: "start", run })).toMatchObject({ ok: true, value: { task: TASK, state: "queued" } });

      // Its task starts; the team does not take the report: marked, and the alarm asked for.
      attempts.taskChanged(task("running"));
      await Promise.all(background);
      expect(wakes).toHaveLength(1);
      expect(sent).toEqual([]);

      // The alarm rings while the team is still down: nothing is lost, the alarm is asked for again.
      await attempts.runDue();
      expect(wakes).toHaveLength(2);

      // The team is back, holding the attempt as queued: the alarm says again that it runs, once.
      teamDown = false;
      held = [{ group: GROUP, n: 1, state: "queued", task: TASK }];
      await attempts.runDue();
      expect(sent.map((r) => [r.n, r.state, r.task])).toEqual([[1, "running", TASK]]);
      // Landed: the next alarm asks the team nothing.
      held = [];
      await attempts.runDue();
      expect(sent).toHaveLength(1);

      // The team holds an attempt this machine never took (its record lost): it is reported failed.
      held = [{ group: GROUP, n: 2, state: "running", task: "task-00000000000000bb-attempts-outbox" }];
      await attempts.reconcile();
      expect(sent.at(-1)).toMatchObject({ n: 2, state: "failed", error: "its machine holds no record of this attempt" });
    });
  });
});
