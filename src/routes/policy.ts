/**
 * The team's permission policy (docs/architecture.md, "The permission policy"): the fourth team document,
 * served as the others are (`GET`/`PUT /config/policy`, its status), and a tester that answers what a
 * policy would do with a sample request, without a machine or an agent.
 */
import { createRoute, type RouteHandler } from "@hono/zod-openapi";
import { PermissionPolicy, PolicyMachineStatus, PolicyTest, PolicyVerdict } from "@agent-runtime/protocol/policy";
import { decidePermission } from "@agent-runtime/protocol/policy-eval";
import { teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { errors, json, jsonBody } from "../http/openapi";
import { teamDocumentRoutes } from "./team-documents";

const testRoute = createRoute(
  declare(
    { role: "viewer", machine: false },
    {
      method: "post",
      path: "/config/policy/test",
      summary: "What the policy (the team's, or a draft) would do with a sample permission request: the decision and the rule that made it",
      request: { body: jsonBody(PolicyTest) },
      responses: { 200: json(PolicyVerdict, "the verdict (rule null: no rule matched, so a person is asked)"), ...errors("unsupported_media_type") },
    },
  ),
);

const testPolicy: RouteHandler<typeof testRoute, AppEnv> = async (c) => {
  c.set("auditQuiet", true); // it changes nothing
  const { request, policy, sessionPolicy } = c.req.valid("json");
  const team = policy ?? (await teamStub(c.env).getDocuments()).policy.config;
  const { agent, machine, cwd, ...facts } = request;
  return c.json(decidePermission(team, sessionPolicy ?? null, facts, { agent, machine, cwd }), 200);
};

export const policyRoutes = teamDocumentRoutes({
  kind: "policy",
  title: "permission policy",
  documentId: "PermissionPolicy",
  document: PermissionPolicy,
  status: PolicyMachineStatus,
  readStatus: (c) => teamStub(c.env).documentStatus("policy"),
}).openapi(testRoute, testPolicy);
