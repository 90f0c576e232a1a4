/**
 * The team's permission policy (docs/architecture.md, "The permission policy"): the fourth team document,
 * served as the others are (`GET`/`PUT /config/policy`, its status), and a tester that answers what a
 * policy would do with a sample request, and which sandbox (docs/architecture.md, "Sandboxes: the team's
 * rules") an agent server of that agent, machine and origin would be started in, without a machine or an agent.
 */
import type { RouteHandler } from "@hono/zod-openapi";
import { PolicyMachineStatus, PolicyTest, PolicyTestResult, TeamPolicy } from "@agent-runtime/protocol/policy";
import { decidePermission } from "@agent-runtime/protocol/policy-eval";
import { decideSandbox } from "@agent-runtime/protocol/sandbox-rules";
import { teamStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { json, jsonBody } from "../http/openapi";
import { teamDocumentRoutes } from "./team-documents";

const testRoute = apiRoute("post", "/config/policy/test", {
  summary:
    "What the policy (the team's, or a draft) would do with a sample permission request: the decision and the rule that made it, and the sandbox its sandbox rules ask for that agent, machine and origin",
  access: { role: "viewer", machine: false },
  request: { body: jsonBody(PolicyTest) },
  answers: { 200: json(PolicyTestResult, "the verdict (rule null: no rule matched, so a person is asked) and the sandbox asked for") },
});

const testPolicy: RouteHandler<typeof testRoute, AppEnv> = async (c) => {
  c.set("auditQuiet", true); // it changes nothing
  const { request, policy, sessionPolicy } = c.req.valid("json");
  // Read back through its schema: a document stored before sandbox rules existed reads as one without them.
  const team = policy ?? TeamPolicy.parse((await teamStub(c.env).getDocuments()).policy.config);
  const { agent, machine, cwd, origin, ...facts } = request;
  const verdict = decidePermission(team, sessionPolicy ?? null, facts, { agent, machine, cwd });
  return c.json({ ...verdict, sandbox: decideSandbox(team.sandbox, { agent, machine, origin }) }, 200);
};

export const policyRoutes = teamDocumentRoutes({
  kind: "policy",
  title: "permission policy",
  document: TeamPolicy,
  status: PolicyMachineStatus,
}).openapi(testRoute, testPolicy);
