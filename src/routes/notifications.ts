/**
 * Notifications (docs/architecture.md, "Notifications"): a token subscribes a webhook or a browser (Web
 * Push) to what happens on the machines in its scope, mutes, tests and removes its subscriptions, and
 * reads every delivery attempt. Events are raised and delivered by the machines' objects.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { scopeAllows } from "../http/access";
import { machineObject, teamStub } from "../durable/stubs";
import type { SubscriptionReach } from "../durable/team/team";
import { bounded } from "../http/bounded";
import { json, jsonBody } from "../http/openapi";
import { refusedTarget } from "../durable/notifications/target-address";
import { fromBase64url, isP256Point } from "../durable/notifications/web-push";
import { settings } from "../settings";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { DeliveryList, EventType, Subscription, SubscriptionCreate, SubscriptionList, type SubscriptionTarget } from "@agent-runtime/protocol/notifications";

/** How many machines a list of deliveries asks at once. */
const LIST_CONCURRENCY = 16;

/** Every token manages its own subscriptions (an admin those its scope covers: `ownerFilter`), whatever its role. */
const OWN = { role: "viewer", machine: false } as const;

const IdParams = z.object({ id: z.string().regex(/^sub-[0-9a-f-]{36}$/, "a subscription id") });

const create = apiRoute("post", "/notifications/subscriptions", {
  summary: "Subscribe a webhook or a browser (Web Push) to events of the machines in the token's scope",
  access: OWN,
  request: { body: jsonBody(SubscriptionCreate) },
  answers: { 201: json(Subscription, "the subscription (its secret and keys are never shown again)") },
  problems: ["conflict"],
});

const list = apiRoute("get", "/notifications/subscriptions", {
  summary: "The token's subscriptions (an admin's: everyone's)",
  access: OWN,
  answers: { 200: json(SubscriptionList, "subscriptions") },
});

const update = apiRoute("patch", "/notifications/subscriptions/{id}", {
  summary: "Mute or unmute a subscription",
  access: OWN,
  request: { params: IdParams, body: jsonBody(z.object({ muted: z.boolean() }).strict()) },
  answers: { 200: json(Subscription, "the subscription") },
  problems: ["not_found"],
});

const remove = apiRoute("delete", "/notifications/subscriptions/{id}", {
  summary: "Remove a subscription",
  access: OWN,
  request: { params: IdParams },
  answers: { 204: { description: "removed" } },
  problems: ["not_found"],
});

const test = apiRoute("post", "/notifications/subscriptions/{id}/test", {
  summary: "Send a test notification to one subscription (its attempts are listed with the others)",
  access: OWN,
  request: { params: IdParams },
  answers: { 202: json(z.object({ eventId: z.string() }), "queued") },
  problems: ["not_found"],
});

const deliveries = apiRoute("get", "/notifications/deliveries", {
  summary: "Every delivery attempt of the token's subscriptions (an admin's: all), newest first",
  access: OWN,
  request: {
    query: z.object({
      subscription: IdParams.shape.id.optional(),
      limit: z.coerce.number().int().min(1).max(500).optional().describe("attempts (default 100)"),
    }),
  },
  answers: { 200: json(DeliveryList, "attempts") },
});

const vapid = apiRoute("get", "/notifications/vapid", {
  summary: "The deployment's Web Push public key (applicationServerKey), or null when Web Push is not set up",
  access: OWN,
  answers: { 200: json(z.object({ publicKey: z.string().nullable() }), "the key") },
});

/** Whose subscriptions these are: the issued token, or the name of a bootstrap or Access identity. */
function ownerOf(c: Context<AppEnv>): string {
  const identity = c.get("identity");
  return identity.tokenId ?? `name:${identity.name}`;
}

/** An admin manages the subscriptions its scope covers (everyone's, for an unscoped one); anyone else their own. */
function ownerFilter(c: Context<AppEnv>): SubscriptionReach {
  const identity = c.get("identity");
  return identity.role === "admin" ? { adminOf: identity.machines } : { owner: ownerOf(c) };
}

function notFound(id: string): never {
  throw new ProblemError("not_found", `no subscription '${id}' of this token`);
}

export const notificationRoutes = new OpenAPIHono<AppEnv>()
  .openapi(create, async function subscribe(c) {
    const body = c.req.valid("json");
    const identity = c.get("identity");
    const origin = new URL(c.req.url);
    const url = body.kind === "webhook" ? body.url : body.subscription.endpoint;
    const refused = refusedTarget(url, settings(c.env).notifyAllowPrivate);
    if (refused) throw new ProblemError("invalid_request", `${body.kind === "webhook" ? "url" : "subscription.endpoint"} ${refused}`);
    for (const machine of body.machines ?? []) {
      if (!scopeAllows(identity.machines, machine))
        throw new ProblemError("permission_denied", `the token '${identity.name}' may not reach machine '${machine}'`, { machine });
    }
    if (body.kind === "webpush") {
      const { p256dh, auth } = body.subscription.keys;
      if (!isP256Point(fromBase64url(p256dh)) || fromBase64url(auth).length !== 16) {
        throw new ProblemError(
          "invalid_request",
          "subscription.keys: p256dh must be a point on the P-256 curve (65 bytes, uncompressed) and auth 16 bytes (base64url), as PushManager gives them",
        );
      }
      if (!settings(c.env).vapid)
        throw new ProblemError("invalid_request", "Web Push is not set up on this deployment: set VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY");
    }
    const target: SubscriptionTarget = {
      id: `sub-${crypto.randomUUID()}`,
      kind: body.kind,
      url,
      secret: body.kind === "webhook" ? body.secret : null,
      keys: body.kind === "webpush" ? body.subscription.keys : null,
      events: body.events ?? EventType.options,
      machines: body.machines ?? null,
      scope: identity.machines,
      muted: false,
      expiresAtMs: identity.expiresAtMs,
      baseUrl: origin.origin,
    };
    const created = await teamStub(c.env).addSubscription(ownerOf(c), target);
    if (!created) throw new ProblemError("conflict", "this token holds as many subscriptions as it may (50): remove some first");
    return c.json(created, 201);
  })
  .openapi(list, async function listSubscriptions(c) {
    return c.json({ subscriptions: await teamStub(c.env).listSubscriptions(ownerFilter(c)) }, 200);
  })
  .openapi(update, async function updateSubscription(c) {
    const { id } = c.req.valid("param");
    const updated = await teamStub(c.env).updateSubscription(id, ownerFilter(c), c.req.valid("json"));
    return updated ? c.json(updated, 200) : notFound(id);
  })
  .openapi(remove, async function unsubscribe(c) {
    const { id } = c.req.valid("param");
    return (await teamStub(c.env).deleteSubscription(id, ownerFilter(c))) ? c.body(null, 204) : notFound(id);
  })
  .openapi(test, async function sendTestNotification(c) {
    const { id } = c.req.valid("param");
    const eventId = crypto.randomUUID();
    const origin = new URL(c.req.url).origin;
    const queued = await teamStub(c.env).testSubscription(id, ownerFilter(c), {
      id: eventId,
      event: "test",
      at: new Date().toISOString(),
      machine: "",
      agent: null,
      session: null,
      url: `${origin}/`,
      text: `A test notification from agent-runtime <${origin}/|Dashboard>`,
    });
    return queued ? c.json({ eventId }, 202) : notFound(id);
  })
  .openapi(deliveries, async function listDeliveries(c) {
    const { subscription, limit = 100 } = c.req.valid("query");
    const team = teamStub(c.env);
    const identity = c.get("identity");
    // An admin reads every attempt; anyone else those of their own subscriptions. `?subscription=` narrows to one.
    const visible = identity.role === "admin" && identity.machines === "*" ? null : (await team.listSubscriptions(ownerFilter(c))).map((s) => s.id);
    const wanted = subscription ? (visible === null || visible.includes(subscription) ? [subscription] : []) : visible;
    if (wanted !== null && wanted.length === 0) return c.json({ deliveries: [] }, 200);
    const machines = await team.machinesWithSessions(identity.machines);
    const pages = [
      await team.listDeliveries(wanted, limit),
      ...(await bounded(machines, LIST_CONCURRENCY, (m) => machineObject(c.env, m).listDeliveries(wanted, limit))),
    ];
    const all = pages.flat().sort((a, b) => b.atMs - a.atMs || b.attempt - a.attempt);
    return c.json({ deliveries: all.slice(0, limit) }, 200);
  })
  .openapi(vapid, async function readVapidKey(c) {
    return c.json({ publicKey: settings(c.env).vapid?.publicKey ?? null }, 200);
  });
