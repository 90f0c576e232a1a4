import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { teamStub } from "../durable/stubs";
import { errors, json } from "../http/openapi";
import { MachineList } from "../protocol/resources";

const list = createRoute(declare({ role: "viewer", machine: false }, {
  method: "get",
  path: "/machines",
  summary: "The machines of this deployment (those in the token's scope) and whether their sidecar is connected",
  responses: { 200: json(MachineList, "known machines, sorted by id"), ...errors() },
}));

export const machineRoutes = new OpenAPIHono<AppEnv>().openapi(list, async (c) => {
  const { machines: scope } = c.get("identity");
  const machines = await teamStub(c.env).listMachines();
  return c.json({ machines: scope === "*" ? machines : machines.filter((m) => scope.includes(m.id)) }, 200);
});
