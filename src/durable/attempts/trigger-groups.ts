/**
 * A GitHub trigger that starts an attempt group (docs/architecture.md, "Attempt groups"): its task's
 * prompt (the template, filled), folder and deadline, run as the trigger's attempts; the group posts its
 * summary on the issue when it ends. A trigger without attempts starts its one task as before.
 */
import type { AttemptGroupRequest } from "@agent-runtime/protocol/attempts";
import type { TriggerHost } from "../triggers/trigger-book";
import type { AttemptGroups } from "./attempt-groups";

export function attemptTriggers(tasks: TriggerHost, groups: AttemptGroups): TriggerHost {
  return {
    start: async (task, who, report, trigger) => {
      const spec = groups.triggerAttempts(trigger);
      if (!spec) return tasks.start(task, who, report, trigger);
      const prompt = typeof task.prompt === "string" ? task.prompt : task.prompt.map((b) => (typeof b.text === "string" ? b.text : "")).join("\n");
      const attempts = spec.attempts.map((a) => ({ agent: a.agent, machine: a.machine ?? task.machine }));
      const request: AttemptGroupRequest = {
        prompt,
        cwd: task.cwd,
        attempts,
        ...(spec.base ? { base: spec.base } : {}),
        ...(spec.check ? { check: spec.check } : {}),
        ...(task.deadlineSeconds ? { deadlineSeconds: task.deadlineSeconds } : {}),
      };
      const started = await groups.start(
        request,
        attempts.map((a) => a.machine),
        who.slice(0, 128),
        report,
      );
      return started.ok ? { ok: true, value: { id: started.value.id } } : started;
    },
  };
}
