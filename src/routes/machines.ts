import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { teamStub } from "../durable/stubs";
import { json } from "../http/openapi";
import { MachineList } from "@agent-runtime/protocol/machines";
import { Identifier } from "@agent-runtime/protocol/values";

const list = apiRoute("get", "/machines", {
  summary: "The machines of this deployment (those in the token's scope) and whether their sidecar is connected, a page at a time",
  access: { role: "viewer", machine: false },
  request: {
    query: z.object({
      limit: z.coerce.number().int().min(1).max(1000).optional().describe("machines per page (default 500)"),
      after: Identifier.optional().describe("the nextAfter of the previous page"),
    }),
  },
  answers: { 200: json(MachineList, "known machines, sorted by id") },
});

export const machineRoutes = new OpenAPIHono<AppEnv>().openapi(list, async function listMachinesRoute(c) {
  const { machines: scope } = c.get("identity");
  const { limit, after } = c.req.valid("query");
  const team = teamStub(c.env);
  if (scope !== "*") return c.json({ machines: await team.machinesByIds(scope), nextAfter: null }, 200);
  return c.json(await team.listMachines({ ...(limit ? { limit } : {}), ...(after ? { after } : {}) }), 200);
});
