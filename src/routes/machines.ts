import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { teamStub } from "../durable/team";
import { errors, json } from "../http/openapi";
import { MachineList } from "../protocol/resources";

const list = createRoute({
  method: "get",
  path: "/machines",
  summary: "The machines of this deployment and whether their sidecar is connected",
  responses: { 200: json(MachineList, "known machines, sorted by id"), ...errors() },
});

export const machineRoutes = new OpenAPIHono<AppEnv>().openapi(list, async (c) => {
  return c.json({ machines: await teamStub(c.env).listMachines() }, 200);
});
