/**
 * GitHub triggers (docs/architecture.md, "GitHub triggers"): a webhook on a repository starts a task when
 * an issue is labelled or a comment starts with a prefix. Managing them takes a token (a trigger belongs
 * to the machine its task runs on); a delivery takes none: its signature with the trigger's secret is
 * its only credential, checked in the team's object before anything of it is used (SECURITY.md).
 */
import { createRoute, OpenAPIHono, type RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import { teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import { recordAudit } from "../http/audit";
import { errors, json } from "../http/openapi";
import { taskRecordRoutes } from "../http/task-records";
import { problem } from "../lib/problem-response";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { machineOfTask } from "@agent-runtime/protocol/tasks";
import { DeliveryOutcome, MAX_DELIVERY_BYTES, Trigger, TriggerId, TriggerList, TriggerRequest, TriggerView } from "@agent-runtime/protocol/triggers";

/** A trigger with the whole URL GitHub sends to: this deployment's origin, as the caller reached it. */
function view(c: Context<AppEnv>, trigger: Trigger): TriggerView {
  return { ...trigger, deliveryUrl: `${new URL(c.req.url).origin}${trigger.deliveryPath}` };
}

const triggers = taskRecordRoutes({
  kind: "triggers",
  schemas: { id: TriggerId, record: Trigger, request: TriggerRequest, list: TriggerList },
  shown: { schema: TriggerView, of: view },
  create: (team, request, who) => team.createTrigger(request, who),
  created: "the trigger, with the URL to give GitHub (its secret is never shown again)",
  summaries: {
    create: "A GitHub webhook that starts a task (its task's machine must be in the token's scope); answers where GitHub sends deliveries",
    list: "The triggers of the machines in the token's scope, with what each last delivery did",
    get: "A trigger",
    delete: "Delete a trigger (its deliveries are refused from now on; tasks it started stay)",
  },
});

const deliveryRoute = createRoute({
  method: "post",
  path: "/triggers/{id}/github",
  summary: "Where GitHub sends a trigger's deliveries: no token, the X-Hub-Signature-256 of the body with the trigger's secret instead",
  security: [],
  request: {
    params: z.object({ id: TriggerId }),
    headers: z.object({
      "x-github-event": z.string().min(1).max(64),
      "x-github-delivery": z.string().min(1).max(128),
      "x-hub-signature-256": z.string().min(1).max(128),
    }),
  },
  responses: {
    202: json(DeliveryOutcome, "a task was started"),
    200: json(DeliveryOutcome, "nothing to start (another event, a replayed delivery, a ping)"),
    ...errors("permission_denied", "payload_too_large"),
  },
});

/** A delivery: audited whatever it did (a refused signature included), never with its body. */
const deliver: RouteHandler<typeof deliveryRoute, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  const headers = c.req.valid("header");
  const body = await c.req.text();
  const outcome = DeliveryOutcome.nullable().parse(
    await teamStub(c.env).githubDelivery(id, {
      event: headers["x-github-event"],
      delivery: headers["x-github-delivery"],
      signature: headers["x-hub-signature-256"],
      body,
    }),
  );
  if (outcome?.task) c.set("machine", machineOfTask(outcome.task));
  const status = outcome === null ? 401 : outcome.outcome === "started" ? 202 : outcome.outcome === "refused" ? 403 : 200;
  recordAudit(c, { token: `(github delivery ${headers["x-github-delivery"].slice(0, 64)})`, role: null, status });
  if (!outcome)
    throw new ProblemError("token_invalid", "the delivery's X-Hub-Signature-256 does not match this trigger's secret (or there is no such trigger)");
  // A comment from someone the trigger does not take: answered (GitHub shows why), audited as refused, nothing started.
  if (outcome.outcome === "refused") throw new ProblemError("permission_denied", outcome.detail);
  return c.json(outcome, status === 202 ? 202 : 200);
};

/** The delivery route, mounted before authentication: its signature is its credential. */
export const githubDeliveryRoutes = new OpenAPIHono<AppEnv>();
githubDeliveryRoutes.use(
  "/triggers/:id/github",
  bodyLimit({ maxSize: MAX_DELIVERY_BYTES, onError: () => problem("payload_too_large", `a delivery is at most ${MAX_DELIVERY_BYTES} bytes`) }),
);
githubDeliveryRoutes.openapi(deliveryRoute, deliver);

export const triggerRoutes = triggers.routes;
