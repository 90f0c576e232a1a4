/**
 * How the team's schedules and GitHub triggers start tasks: through the machine object's task calls
 * (durable/tasks/), whose answers cross a Durable Object boundary and so are parsed, never cast. Each
 * says what started it (`origin`), so the task's agent gets the sandbox the team's rules give that origin.
 */
import { FINISHED_TASK_STATES, machineOfTask, TaskState } from "@agent-runtime/protocol/tasks";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { z } from "zod";
import type { Env } from "../../env";
import type { ScheduleHost } from "../schedules/schedule-book";
import { machineObject } from "../stubs";
import type { TriggerHost } from "../triggers/trigger-book";

/** What the team reads of a machine object's answer about a task. */
const TaskOutcome = z.union([
  z.object({ ok: z.literal(true), value: z.object({ id: z.string(), state: TaskState }).passthrough() }),
  z.object({ ok: z.literal(false), problem: z.object({ code: z.string(), detail: z.string() }).passthrough() }),
]);

/** A refused start is the caller's conflict (the machine's queue is full, the agent unknown…), said in the machine's words. */
function started(answer: unknown): Outcome<{ id: string }> {
  const outcome = TaskOutcome.parse(answer);
  return outcome.ok ? { ok: true, value: { id: outcome.value.id } } : { ok: false, problem: { code: "conflict", detail: outcome.problem.detail } };
}

export function scheduleTasks(env: Env): ScheduleHost {
  return {
    start: async (schedule) => {
      const who = `schedule ${schedule.id} of ${schedule.createdBy}`;
      return started(
        await machineObject(env, schedule.task.machine).taskCall({
          op: "submit",
          request: schedule.task,
          machine: schedule.task.machine,
          who,
          origin: "schedule",
        }),
      );
    },
    going: async (task) => {
      const read = TaskOutcome.parse(await machineObject(env, machineOfTask(task)).taskCall({ op: "get", id: task }));
      return read.ok && !FINISHED_TASK_STATES.has(read.value.state);
    },
  };
}

export function triggerTasks(env: Env): TriggerHost {
  return {
    start: async (task, who, report) =>
      started(await machineObject(env, task.machine).taskCall({ op: "submit", request: task, machine: task.machine, who, report, origin: "trigger" })),
  };
}
