/**
 * What turns cost, for the team (docs/architecture.md, "Usage"; docs/agents.md, "Usage and cost"): summed from the
 * sessions' records on each machine in the caller's scope, grouped by agent, machine, token or day. Admins
 * read everyone's; anyone else their own sessions' (those their token started).
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { machinesToList } from "../http/access";
import { bounded } from "../http/bounded";
import { json } from "../http/openapi";
import { machineObject } from "../durable/stubs";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { sumUsage, UsageGroupBy, UsageReport, UsageRow } from "@agent-runtime/protocol/usage";

const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "a UTC day: YYYY-MM-DD")
  .refine((d) => {
    const at = Date.parse(`${d}T00:00:00Z`);
    return !Number.isNaN(at) && new Date(at).toISOString().startsWith(d);
  }, "a real day");

const report = apiRoute("get", "/usage", {
  summary: "Tokens and cost of the sessions' turns in a period (UTC days, inclusive), grouped: admins see everyone's, others their own",
  access: { role: "member", machine: false },
  request: {
    query: z.object({
      from: Day.optional().describe("first day (default: 30 days before `to`)"),
      to: Day.optional().describe("last day (default: today)"),
      groupBy: UsageGroupBy.optional().describe("agent (default), machine, token or day"),
    }),
  },
  answers: { 200: json(UsageReport, "the totals") },
});

/** How many machines are asked at once. */
const CONCURRENCY = 16;

export const usageRoutes = new OpenAPIHono<AppEnv>().openapi(report, async function readUsage(c) {
  const query = c.req.valid("query");
  const to = query.to ?? new Date().toISOString().slice(0, 10);
  const from = query.from ?? new Date(Date.parse(`${to}T00:00:00Z`) - 30 * 86_400_000).toISOString().slice(0, 10);
  if (from > to) throw new ProblemError("invalid_request", `from (${from}) is after to (${to})`);
  const identity = c.get("identity");
  const own = identity.role === "admin" ? null : identity.name;
  const machines = await machinesToList(c, undefined);
  const rows = (await bounded(machines, CONCURRENCY, (m) => machineObject(c.env, m).usageRows(from, to, own))).flat();
  const groupBy = query.groupBy ?? "agent";
  return c.json({ from, to, groupBy, ...sumUsage(z.array(UsageRow).parse(rows), groupBy) }, 200);
});
