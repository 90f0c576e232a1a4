import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { bearerToken, isApiToken } from "../http/auth";
import { machineStub } from "../http/machine";
import { errors, json } from "../http/openapi";
import { ProblemError } from "../protocol/problems";

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

export const healthRoutes = new OpenAPIHono<AppEnv>().openapi(health, async (c) => {
  const machine = c.req.param("machine");
  if (machine === undefined) return c.json({ status: "ok" as const }, 200);
  // A machine's health says whether that machine exists and is up: token holders only.
  if (!isApiToken(c.env.API_TOKEN, bearerToken(c.req.header("authorization")))) {
    throw new ProblemError("token_invalid", "send 'Authorization: Bearer <API token>'");
  }
  const connected = await (await machineStub(c)).isOnline();
  return c.json({ status: "ok" as const, machine: { id: machine, connected } }, 200);
});
