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
import { runtimeId } from "./ids";
import { resource, strictResource } from "./resource";

export const TriggerId = runtimeId("TriggerId", "trg", "trigger");

/**
 * Triggers a machine's tasks may have: counted per machine, so a member of one machine cannot use up what
 * members of others need. The team's ceiling is only far above what teams reach (the team object's storage).
 */
export const MAX_TRIGGERS_PER_MACHINE = 200;
export const MAX_TRIGGERS = 10_000;
/**
 * How long a delivery is remembered, by its id and by a digest of its exact body (what the signature covers):
 * the same body again within it, under any delivery id, is a replay and starts nothing. A comment older than
 * this starts nothing either, whatever its delivery.
 */
export const DELIVERY_WINDOW_MS = 30 * 86_400_000;
/** At most this many deliveries are remembered per trigger within the window (the oldest go first). */
export const DELIVERIES_REMEMBERED = 10_000;

/** GitHub's `author_association`: how a comment's author stands to the repository. */
export const AUTHOR_ASSOCIATIONS = ["OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN", "NONE"] as const;
/** The repository's people: who may fire a comment trigger unless the trigger says otherwise. */
export const REPOSITORY_PEOPLE = ["OWNER", "MEMBER", "COLLABORATOR"] as const;

export const TriggerAuthors = strictResource("TriggerAuthors", {
  associations: z
    .array(z.enum(AUTHOR_ASSOCIATIONS))
    .max(AUTHOR_ASSOCIATIONS.length)
    .default([...REPOSITORY_PEOPLE])
    .describe("a comment's author_association that may fire it (default OWNER, MEMBER, COLLABORATOR; [] for none)"),
  logins: z
    .array(z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, "a GitHub login"))
    .max(100)
    .default([])
    .describe("GitHub logins that may fire it whatever their association"),
});
export type TriggerAuthors = z.infer<typeof TriggerAuthors>;
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

export const TriggerRequest = strictResource("TriggerRequest", {
  kind: z.literal("github"),
  secret: z.string().min(16).max(256).describe("the webhook's secret, as set on GitHub: deliveries are signed with it"),
  events: z.array(GithubEvent).min(1).max(10),
  authors: TriggerAuthors.prefault({}).describe(
    "who may fire its comment events (a label needs triage rights on GitHub already); anyone else's comment is refused and starts nothing",
  ),
  task: ScheduleTask.describe(
    "the task each delivery starts; its prompt is a template: {{title}}, {{body}}, {{url}}, {{number}}, {{repository}}, {{comment}}, {{author}}",
  ),
  attempts: AttemptsTemplate.optional().describe(
    "start an attempt group instead of one task: the task's prompt, folder and deadline as 2–8 attempts; its summary is posted on the issue when every attempt finished",
  ),
});
export type TriggerRequest = z.infer<typeof TriggerRequest>;

export const Trigger = resource("Trigger", {
  id: TriggerId,
  kind: z.literal("github"),
  events: z.array(GithubEvent),
  authors: TriggerAuthors,
  task: ScheduleTask,
  attempts: AttemptsTemplate.nullable().optional().describe("the attempt group each delivery starts instead of one task"),
  createdBy: z.string(),
  createdAtMs: z.number().int(),
  deliveryPath: z.string().describe("where GitHub sends deliveries, under the deployment's URL: /v1/triggers/{id}/github"),
  lastDelivery: z
    .object({ atMs: z.number().int(), delivery: z.string(), outcome: z.string(), task: z.string().nullable() })
    .nullable()
    .describe("what the last delivery did"),
});
export type Trigger = z.infer<typeof Trigger>;

/** A trigger as the API shows it: with the whole URL to give GitHub, on the deployment's own origin. */
export const TriggerView = Trigger.extend({ deliveryUrl: z.string().describe("the payload URL to give GitHub") }).meta({ id: "TriggerView" });
export type TriggerView = z.infer<typeof TriggerView>;

export const TriggerList = resource("TriggerList", { triggers: z.array(TriggerView) });

/** What a delivery did: started a task, or why not. */
export const DeliveryOutcome = resource("DeliveryOutcome", {
  outcome: z.enum(["started", "ignored", "replayed", "refused", "failed"]),
  detail: z.string(),
  task: z.string().nullable(),
});
export type DeliveryOutcome = z.infer<typeof DeliveryOutcome>;
