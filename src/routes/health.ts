import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { guard } from "../http/access";
import { authenticate } from "../http/auth";
import { machineStub } from "../http/machine";
import { errors, json } from "../http/openapi";

const Health = z
  .object({
    status: z.literal("ok"),
    machine: z.object({ id: z.string(), connected: z.boolean() }).optional().describe("under /machines/{machine}: that machine's tunnel"),
  })
  .meta({ id: "Health" });

const health = createRoute({
  method: "get",
  path: "/health",
  summary: "Liveness of the worker; under /machines/{machine}, whether that machine is connected",
  security: [],
  responses: { 200: json(Health, "the worker answers"), ...errors() },
});

const machineViewer = guard({ role: "viewer", machine: true });

export const healthRoutes = new OpenAPIHono<AppEnv>().openapi(health, async function answerHealth(c) {
  const machine = c.req.param("machine");
  if (machine === undefined) return c.json({ status: "ok" as const }, 200);
  // A machine's health says whether that machine exists and is up: for whoever may see that machine.
  let connected = false;
  // A refusal is thrown (401, 403, 404) and answered by the app's error handler.
  await authenticate(c, async () => {
    await machineViewer(c, async () => {
      connected = await machineStub(c).isOnline();
    });
  });
  return c.json({ status: "ok" as const, machine: { id: machine, connected } }, 200);
});
