import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { DASHBOARD_FILES, DASHBOARD_PATHS, dashboard, dashboardAsset, dashboardFile, pageOrProblem } from "./dashboard/page";
import type { AppEnv } from "./env";
import { auditTrail } from "./http/audit";
import { authenticate } from "./http/auth";
import { notFound, problem } from "./lib/problem-response";
import { errorAnswer } from "./http/error-answer";
import { validationHook } from "./http/validation";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { acpRoutes } from "./routes/acp";
import { agentRoutes } from "./routes/agents";
import { loginRoutes } from "./routes/logins";
import { usageRoutes } from "./routes/usage";
import { healthRoutes } from "./routes/health";
import { machineRoutes } from "./routes/machines";
import { processRoutes } from "./routes/processes";
import { agentsConfigRoutes } from "./routes/agents-config";
import { mcpRoutes } from "./routes/mcp";
import { skillsRoutes } from "./routes/skills";
import { policyRoutes } from "./routes/policy";
import { taskRoutes } from "./routes/tasks";
import { attemptRoutes } from "./routes/attempts";
import { scheduleRoutes } from "./routes/schedules";
import { githubDeliveryRoutes, triggerRoutes } from "./routes/triggers";
import { sessionRoutes } from "./routes/sessions";
import { sessionEventRoutes } from "./routes/session-events";
import { changeRoutes } from "./routes/changes";
import { gitRoutes } from "./routes/git";
import { notificationRoutes } from "./routes/notifications";
import { desktopRoutes } from "./routes/desktop";
import { fileRoutes, STREAMED_BODY_PATHS } from "./routes/files";
import { trustRoutes } from "./routes/trust";
import { sidecarPackage } from "./routes/sidecar-package";
import { tunnelRoutes } from "./routes/tunnel";
import { acpTransportRoutes } from "./routes/acp-transport";
import { portRoutes } from "./routes/ports";
import { hostPreview, pathPreview } from "./routes/preview";

function jsonBodyLimit() {
  return bodyLimit({
    maxSize: LIMITS.maxBodyBytes,
    onError: () => problem("payload_too_large", `the body is larger than ${LIMITS.maxBodyBytes} bytes`),
  });
}

/** ACP's remote transport, `{base_url}/acp`: mounted at `/` and at `/machines/{machine}` (outside /v1, as ACP clients expect it). */
export function acpTransportApp() {
  const acp = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  acp.use("/acp", authenticate, auditTrail, jsonBodyLimit());
  acp.route("/", acpTransportRoutes);
  return acp;
}

/** What every route of `/v1` after health and GitHub's deliveries goes through: the token, the audit, the body's limit. */
function withV1Middleware(v1: OpenAPIHono<AppEnv>): OpenAPIHono<AppEnv> {
  v1.use("*", authenticate);
  v1.use("*", auditTrail);
  const limit = jsonBodyLimit();
  // File bodies stream to the machine in pieces and have their own, larger limit (durable/files/file-transfer.ts).
  v1.use("*", function bodyLimitUnlessFile(c, next) {
    return STREAMED_BODY_PATHS.some((path) => c.req.path.endsWith(path)) ? next() : limit(c, next);
  });
  return v1;
}

/** Everything under `{base_url}/v1`; mounted at `/v1` and at `/machines/{machine}/v1`. */
export function v1App() {
  const v1 = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  v1.route("/", healthRoutes); // the two routes without a token: health, and
  v1.route("/", githubDeliveryRoutes); // a GitHub delivery, whose signature is its credential
  withV1Middleware(v1);
  v1.route("/", machineRoutes);
  v1.route("/", acpRoutes);
  v1.route("/", sessionEventRoutes); // before /sessions/{id}, which "events" is not
  v1.route("/", sessionRoutes);
  v1.route("/", taskRoutes);
  v1.route("/", attemptRoutes);
  v1.route("/", scheduleRoutes);
  v1.route("/", triggerRoutes);
  v1.route("/", changeRoutes);
  v1.route("/", gitRoutes);
  v1.route("/", notificationRoutes);
  v1.route("/", processRoutes);
  v1.route("/", fileRoutes);
  v1.route("/", agentRoutes);
  v1.route("/", loginRoutes);
  v1.route("/", usageRoutes);
  v1.route("/", skillsRoutes);
  v1.route("/", mcpRoutes);
  v1.route("/", policyRoutes);
  v1.route("/", agentsConfigRoutes);
  v1.route("/", trustRoutes);
  v1.route("/", desktopRoutes);
  v1.route("/", portRoutes);
  v1.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "an API token (API_TOKEN, or one issued by POST /v1/tokens)",
  });
  // Generated from the same zod schemas that validate requests: no shape is written twice.
  const config = {
    openapi: "3.1.0",
    info: {
      title: "agent-runtime",
      version: "1",
      description:
        "A hosted runtime for coding agents. Paths are relative to {base_url}, the worker (the default machine) or the worker's /machines/{machine}: the API under /v1, ACP's remote transport at /acp. Every error is application/problem+json.",
    },
    servers: [
      { url: "/", description: "the default machine" },
      { url: "/machines/{machine}", description: "a named machine", variables: { machine: { default: "local" } } },
    ],
    security: [{ bearer: [] }],
  };
  // Generated from the same zod schemas that validate requests: no shape is written twice.
  v1.get("/openapi.json", (c) => {
    const api = v1.getOpenAPI31Document(config);
    const acp = acpTransportApp().getOpenAPI31Document(config);
    const paths = Object.fromEntries(Object.entries(api.paths ?? {}).map(([path, item]) => [`/v1${path}`, item]));
    return c.json({ ...api, paths: { ...paths, ...acp.paths } });
  });
  return v1;
}

/**
 * The edges of every request, around what `mount` adds: a preview's own host (PREVIEW_DOMAIN) is the
 * app's whatever the path, never the dashboard or the API; then the not-found page and every error as a problem.
 */
function withEdges(mount: (app: Hono<AppEnv>) => void): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("*", hostPreview);
  mount(app);
  app.notFound((c) => pageOrProblem(c, notFound));
  app.onError((err, c) => errorAnswer(err, c.req.method, c.req.url));
  return app;
}

export function createApp() {
  return withEdges((app) => {
    const v1 = v1App();
    for (const path of DASHBOARD_PATHS) app.get(path, dashboard);
    app.get("/assets/:name", dashboardAsset);
    for (const name of DASHBOARD_FILES) app.get(name, dashboardFile);
    app.get("/v1/sidecar/:file", sidecarPackage);
    app.route("/", tunnelRoutes);
    // Path mode: the pass in the path is the credential (no API token, no cookie: routes/preview.ts).
    app.all("/machines/:machine/ports/:port", pathPreview);
    app.all("/machines/:machine/ports/:port/*", pathPreview);
    app.route("/v1", v1);
    app.route("/machines/:machine/v1", v1);
    const acp = acpTransportApp();
    app.route("/", acp);
    app.route("/machines/:machine", acp);
  });
}

/**
 * `POST {base_url}/v1/acp/{server_id}`, the relay's message (docs/architecture.md, "The relay's route
 * before the router"): every message of every session comes this way, and the whole app's router (a
 * trie: its route set is one `RegExpRouter` refuses) costs more than anything else it does for it. The
 * worker's entry sends exactly the requests `isRelayPost` (http/relay-post.ts) recognises here instead: an app of the same
 * edges, the same `/v1` middleware and mounts, and the ACP relay's routes alone, so the route answers as
 * it does through the whole app (src/app-relay.workers.test.ts holds the two to the same answers). A
 * message whose every check passes at once does not reach even this app (http/relay-post.ts).
 */
export function createRelayApp() {
  return withEdges((app) => {
    const v1 = withV1Middleware(new OpenAPIHono<AppEnv>({ defaultHook: validationHook }));
    v1.route("/", acpRoutes);
    app.route("/v1", v1);
    app.route("/machines/:machine/v1", v1);
  });
}
