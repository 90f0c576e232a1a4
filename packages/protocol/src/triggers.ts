/**
 * Triggers (docs/architecture.md, "GitHub triggers"): a GitHub webhook that starts a task when an issue
 * is labelled or a comment starts with a prefix. Deliveries are authenticated by their signature alone
 * (`X-Hub-Signature-256`, the trigger's secret), never by a bearer token.
 */
import { z } from "zod";
import { AttemptsTemplate } from "./attempts";
import { ScheduleTask } from "./schedules";
export { IssueRef } from "./tasks";
import { CONTROL_CHARS } from "./values";

export const TriggerId = z
  .string()
  .regex(/^trg-[0-9a-f]{16}$/, "a trigger id as the runtime hands it out (trg-<16 hex>)")
  .meta({ id: "TriggerId" });

/** Triggers a deployment keeps, and delivery ids each remembers (a replay within them is ignored). */
export const MAX_TRIGGERS = 200;
export const DELIVERIES_REMEMBERED = 1000;
/** A delivery body GitHub sends for an issue or a comment is far smaller. */
export const MAX_DELIVERY_BYTES = 1024 * 1024;

export const GithubEvent = z.discriminatedUnion("on", [
  z.object({ on: z.literal("issues.labeled"), label: z.string().min(1).max(100).describe("the label that starts a task") }).strict(),
  z
    .object({
      on: z.literal("issue_comment"),
      prefix: z
        .string()
        .min(1)
        .max(50)
        .refine((v) => !CONTROL_CHARS.test(v))
        .describe("a new comment starting with this starts a task: `/agent`"),
    })
    .strict(),
]);
export type GithubEvent = z.infer<typeof GithubEvent>;

export const TriggerRequest = z
  .object({
    kind: z.literal("github"),
    secret: z.string().min(16).max(256).describe("the webhook's secret, as set on GitHub: deliveries are signed with it"),
    events: z.array(GithubEvent).min(1).max(10),
    task: ScheduleTask.describe(
      "the task each delivery starts; its prompt is a template: {{title}}, {{body}}, {{url}}, {{number}}, {{repository}}, {{comment}}, {{author}}",
    ),
    attempts: AttemptsTemplate.optional().describe(
      "start an attempt group instead of one task: the task's prompt, folder and deadline as 2–8 attempts; its summary is posted on the issue when every attempt finished",
    ),
  })
  .strict()
  .meta({ id: "TriggerRequest" });
export type TriggerRequest = z.infer<typeof TriggerRequest>;

export const Trigger = z
  .object({
    id: TriggerId,
    kind: z.literal("github"),
    events: z.array(GithubEvent),
    task: ScheduleTask,
    attempts: AttemptsTemplate.nullable().optional().describe("the attempt group each delivery starts instead of one task"),
    createdBy: z.string(),
    createdAtMs: z.number().int(),
    deliveryPath: z.string().describe("where GitHub sends deliveries, under the deployment's URL: /v1/triggers/{id}/github"),
    lastDelivery: z
      .object({ atMs: z.number().int(), delivery: z.string(), outcome: z.string(), task: z.string().nullable() })
      .nullable()
      .describe("what the last delivery did"),
  })
  .meta({ id: "Trigger" });
export type Trigger = z.infer<typeof Trigger>;

/** A trigger as the API shows it: with the whole URL to give GitHub, on the deployment's own origin. */
export const TriggerView = Trigger.extend({ deliveryUrl: z.string().describe("the payload URL to give GitHub") }).meta({ id: "TriggerView" });
export type TriggerView = z.infer<typeof TriggerView>;

export const TriggerList = z.object({ triggers: z.array(TriggerView) }).meta({ id: "TriggerList" });

/** What a delivery did: started a task, or why not. */
export const DeliveryOutcome = z
  .object({
    outcome: z.enum(["started", "ignored", "replayed", "failed"]),
    detail: z.string(),
    task: z.string().nullable(),
  })
  .meta({ id: "DeliveryOutcome" });
export type DeliveryOutcome = z.infer<typeof DeliveryOutcome>;
