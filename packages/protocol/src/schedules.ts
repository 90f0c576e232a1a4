/**
 * Schedules (docs/architecture.md, "Schedules"): a task started again and again at the times a cron
 * expression names, in a time zone. The team's object keeps them and its one alarm fires each when due.
 */
import { z } from "zod";
import { AttemptsTemplate, GroupId } from "./attempts";
import { TaskId, TaskRequest } from "./tasks";
import { Identifier } from "./values";
import { runtimeId } from "./ids";
import { resource, strictResource } from "./resource";

export const ScheduleId = runtimeId("ScheduleId", "sch", "schedule");

/** Runs a schedule remembers, newest first. */
export const SCHEDULE_RUNS_KEPT = 20;
/** Schedules per machine (counted per machine, as triggers are), and the team's ceiling far above what teams reach. */
export const MAX_SCHEDULES_PER_MACHINE = 1000;
export const MAX_SCHEDULES = 50_000;

export const ScheduleTask = TaskRequest.extend({ machine: Identifier.describe("where each run's task runs") }).meta({ id: "ScheduleTask" });

export const ScheduleRequest = strictResource("ScheduleRequest", {
  cron: z.string().min(9).max(100).describe("five fields (minute hour day month weekday), or six with seconds first: `0 9 * * 1-5` is 09:00 on weekdays"),
  timezone: z.string().min(1).max(64).default("UTC").describe("an IANA time zone: Europe/Paris, America/New_York (default UTC)"),
  task: ScheduleTask,
  paused: z.boolean().optional(),
  attempts: AttemptsTemplate.optional().describe("start an attempt group of the task's prompt, folder and deadline at each run instead of one task"),
});
export type ScheduleRequest = z.infer<typeof ScheduleRequest>;

export const ScheduleRun = resource("ScheduleRun", {
  atMs: z.number().int(),
  task: z.union([TaskId, GroupId]).nullable().describe("the task it started (or its attempt group: grp-…)"),
  skipped: z.string().nullable().describe("why no task was started (the last run still going, the machine unknown…)"),
});
export type ScheduleRun = z.infer<typeof ScheduleRun>;

export const Schedule = resource("Schedule", {
  id: ScheduleId,
  cron: z.string(),
  timezone: z.string(),
  task: ScheduleTask,
  attempts: AttemptsTemplate.nullable().optional().describe("the attempt group each run starts instead of one task"),
  paused: z.boolean(),
  createdBy: z.string(),
  createdAtMs: z.number().int(),
  nextRunAtMs: z.number().int().nullable().describe("null while paused, or when the expression names no later time"),
  runs: z.array(ScheduleRun).describe(`its last ${SCHEDULE_RUNS_KEPT} runs, newest first`),
});
export type Schedule = z.infer<typeof Schedule>;

export const ScheduleList = resource("ScheduleList", { schedules: z.array(Schedule) });

export const SchedulePatch = strictResource("SchedulePatch", { paused: z.boolean() });
