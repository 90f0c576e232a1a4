/**
 * GitHub triggers and schedules that start attempt groups (docs/architecture.md, "Attempt groups"): their
 * task's prompt (a trigger's template, filled), folder and deadline, run as their attempts. A trigger's
 * group posts its summary on the issue when it ends; a schedule skips a run while its last group is going.
 * One without attempts starts its one task as before.
 */
import type { AttemptGroupRequest, AttemptsTemplate } from "@agent-runtime/protocol/attempts";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ScheduleTask } from "@agent-runtime/protocol/schedules";
import type { IssueRef, TaskOrigin } from "@agent-runtime/protocol/tasks";
import type { z } from "zod";
import type { ScheduleHost } from "../schedules/schedule-book";
import type { TriggerHost } from "../triggers/trigger-book";
import type { AttemptGroups } from "./attempt-groups";

async function startGroup(
  groups: AttemptGroups,
  task: z.output<typeof ScheduleTask>,
  spec: AttemptsTemplate,
  who: string,
  issue: IssueRef | null,
  origin: Extract<TaskOrigin, "schedule" | "trigger">,
): Promise<Outcome<{ id: string }>> {
  const prompt = typeof task.prompt === "string" ? task.prompt : task.prompt.map((b) => (typeof b.text === "string" ? b.text : "")).join("\n");
  const attempts = spec.attempts.map((a) => ({ agent: a.agent, machine: a.machine ?? task.machine }));
  const request: AttemptGroupRequest = {
    prompt,
    cwd: task.cwd,
    attempts,
    ...(spec.base ? { base: spec.base } : {}),
    ...(spec.check ? { check: spec.check } : {}),
    ...(task.deadlineSeconds ? { deadlineSeconds: task.deadlineSeconds } : {}),
    // The task's own policy holds for each attempt, as it would for the one task.
    ...(task.policy ? { policy: task.policy } : {}),
  };
  const started = await groups.start(
    request,
    attempts.map((a) => a.machine),
    who.slice(0, 128),
    issue,
    origin,
  );
  return started.ok ? { ok: true, value: { id: started.value.id } } : started;
}

export function attemptTriggers(tasks: TriggerHost, groups: AttemptGroups): TriggerHost {
  return {
    start: async (task, who, report, trigger) => {
      const spec = groups.templateOf(trigger);
      return spec ? startGroup(groups, task, spec, who, report, "trigger") : tasks.start(task, who, report, trigger);
    },
  };
}

export function attemptSchedules(tasks: ScheduleHost, groups: AttemptGroups): ScheduleHost {
  return {
    start: async (schedule) => {
      const spec = groups.templateOf(schedule.id);
      return spec ? startGroup(groups, schedule.task, spec, `schedule ${schedule.id} of ${schedule.createdBy}`, null, "schedule") : tasks.start(schedule);
    },
    going: async (id) => (id.startsWith("grp-") ? groups.going(id) : tasks.going(id)),
  };
}
