/**
 * Notifications (docs/architecture.md, "Notifications"): what happens that a person away should know,
 * who is told (subscriptions, per token), and every attempt to tell them (deliveries).
 */
import { TurnChanges } from "./review";
import { z } from "zod";
import { JsonRpcId } from "./acp";
import { AgentId, Identifier } from "./values";
import { PermissionOption } from "./sessions";
import { LoginMethod, LoginQuestion } from "./logins";
import { TurnUsage } from "./usage";
import { resource } from "./resource";

export const EventType = z
  .enum([
    "permission.requested",
    "elicitation.requested",
    "agent.login",
    "turn.finished",
    "turn.failed",
    "sandbox.blocked",
    "machine.offline",
    "machine.online",
    "test",
  ])
  .describe("test: only what POST …/subscriptions/{id}/test sends")
  .meta({ id: "NotificationEvent" });
export type EventType = z.infer<typeof EventType>;

const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+={0,2}$/, "base64url");

/** A subscription's events: a set (each named once), at most every event there is. */
const Events = z
  .array(EventType)
  .min(1)
  .max(EventType.options.length)
  .refine((events) => new Set(events).size === events.length, "name each event once");

export const SubscriptionCreate = z
  .discriminatedUnion("kind", [
    z
      .object({
        kind: z.literal("webhook"),
        url: z.string().url().max(2048),
        secret: z.string().min(16, "at least 16 characters").max(256).describe("signs each delivery: X-Agent-Runtime-Signature"),
        events: Events.optional().describe("default: every event"),
        machines: z.array(Identifier).max(256).optional().describe("default: every machine in the token's scope"),
      })
      .strict(),
    z
      .object({
        kind: z.literal("webpush"),
        subscription: z.object({
          endpoint: z.string().url().max(2048),
          expirationTime: z.number().nullable().optional(),
          keys: z.object({ p256dh: Base64Url.max(200), auth: Base64Url.max(64) }),
        }),
        events: Events.optional(),
        machines: z.array(Identifier).max(256).optional(),
      })
      .strict(),
  ])
  .meta({ id: "SubscriptionCreate" });
export type SubscriptionCreate = z.infer<typeof SubscriptionCreate>;

/** A subscription as its owner reads it: never its webhook secret nor the browser's keys. */
export const Subscription = resource("Subscription", {
  id: z.string(),
  kind: z.enum(["webhook", "webpush"]),
  /** The webhook URL, or the push service's origin. */
  target: z.string(),
  events: z.array(EventType),
  machines: z.array(Identifier).nullable(),
  muted: z.boolean(),
  owner: z.string().describe("the token it belongs to"),
  createdAtMs: z.number().int(),
});
export type Subscription = z.infer<typeof Subscription>;

export const SubscriptionList = resource("SubscriptionList", { subscriptions: z.array(Subscription) });

/** What a machine's object needs to deliver to a subscription: its secrets too, so it never crosses to a sidecar. */
export const SubscriptionTarget = z.object({
  id: z.string(),
  kind: z.enum(["webhook", "webpush"]),
  url: z.string(),
  secret: z.string().nullable(),
  keys: z.object({ p256dh: z.string(), auth: z.string() }).nullable(),
  events: z.array(EventType),
  machines: z.array(z.string()).nullable(),
  /** The token's machine scope at the time: events of other machines are never sent. */
  scope: z.union([z.literal("*"), z.array(z.string())]),
  muted: z.boolean(),
  expiresAtMs: z.number().nullable(),
  /** The worker's address the subscription was made at: where links in notifications point. */
  baseUrl: z.string(),
});
export type SubscriptionTarget = z.infer<typeof SubscriptionTarget>;

/** The JSON a webhook receives (and, shortened, what a push notification says). */
export const NotificationPayload = resource("NotificationPayload", {
  id: z.string(),
  event: EventType,
  at: z.string().describe("ISO 8601"),
  machine: z.string(),
  agent: AgentId.nullable(),
  session: z.object({ id: z.string(), sessionId: z.string(), title: z.string().nullable() }).nullable(),
  permission: z.object({ requestId: JsonRpcId, title: z.string(), options: z.array(PermissionOption) }).optional(),
  turn: z
    .object({
      stopReason: z.string().nullable(),
      durationMs: z.number().nullable(),
      lastLine: z.string().nullable(),
      changes: TurnChanges.nullable().optional().describe("what the turn changed in the session's folder"),
      usage: TurnUsage.nullable().optional().describe("what the turn used, as the agent reported it"),
    })
    .optional(),
  sandbox: z
    .object({ kind: z.enum(["network", "file"]), target: z.string(), reason: z.string() })
    .optional()
    .describe("sandbox.blocked: what the agent's sandbox refused"),
  question: z
    .object({ requestId: JsonRpcId, title: z.string(), mode: z.enum(["form", "url"]).nullable() })
    .optional()
    .describe("elicitation.requested: what the agent asks"),
  login: z
    .object({
      methods: z.array(LoginMethod),
      question: LoginQuestion.optional().describe("the agent's own login flow asks a person to open this page (no session yet)"),
    })
    .optional()
    .describe("agent.login: how the agent can be logged in (POST /v1/agents/{agent}/login)"),
  url: z.string().describe("the session (or the machine) in the dashboard"),
  text: z.string().describe("a one-line summary, usable as a Slack message"),
});
export type NotificationPayload = z.infer<typeof NotificationPayload>;

export const DeliveryAttempt = resource("DeliveryAttempt", {
  deliveryId: z.string(),
  subscriptionId: z.string(),
  event: EventType,
  eventId: z.string(),
  machine: z.string().nullable(),
  attempt: z.number().int().min(1),
  atMs: z.number().int(),
  outcome: z.enum(["delivered", "retrying", "failed", "dropped"]).describe("dropped: the push service said the subscription is gone"),
  httpStatus: z.number().int().nullable(),
  error: z.string().nullable(),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

export const DeliveryList = resource("DeliveryList", { deliveries: z.array(DeliveryAttempt) });

/** Attempts per delivery before it is given up (the first included). */
export const MAX_ATTEMPTS = 5;
