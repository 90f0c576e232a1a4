import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { dashboard, dashboardAsset, dashboardStatic } from "./dashboard/page";
import type { AppEnv } from "./env";
import { auditTrail } from "./http/audit";
import { authenticate } from "./http/auth";
import { notFound, problem, problemResponse } from "./http/problem";
import { validationHook } from "./http/validation";
import { LIMITS } from "./protocol/limits";
import { ProblemError } from "./protocol/problems";
import { acpRoutes } from "./routes/acp";
import { agentRoutes } from "./routes/agents";
import { healthRoutes } from "./routes/health";
import { machineRoutes } from "./routes/machines";
import { processRoutes } from "./routes/processes";
import { mcpRoutes } from "./routes/mcp";
import { skillsRoutes } from "./routes/skills";
import { sessionRoutes } from "./routes/sessions";
import { notificationRoutes } from "./routes/notifications";
import { desktopRoutes } from "./routes/desktop";
import { fileRoutes, STREAMED_BODY_PATHS } from "./routes/files";
import { trustRoutes } from "./routes/trust";
import { sidecarPackage } from "./routes/sidecar-package";
import { tunnelRoutes } from "./routes/tunnel";

/** Everything under `{base_url}/v1`; mounted at `/v1` and at `/machines/{machine}/v1`. */
export function v1App() {
  const v1 = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  v1.route("/", healthRoutes); // the one route without a token
  v1.use("*", authenticate);
  v1.use("*", auditTrail);
  const jsonBodyLimit = bodyLimit({
    maxSize: LIMITS.maxBodyBytes,
    onError: () => problem("payload_too_large", `the body is larger than ${LIMITS.maxBodyBytes} bytes`),
  });
  // File bodies stream to the machine in pieces and have their own, larger limit (http/file-transfer.ts).
  v1.use("*", (c, next) => (STREAMED_BODY_PATHS.some((path) => c.req.path.endsWith(path)) ? next() : jsonBodyLimit(c, next)));
  v1.route("/", machineRoutes);
  v1.route("/", acpRoutes);
  v1.route("/", sessionRoutes);
  v1.route("/", notificationRoutes);
  v1.route("/", processRoutes);
  v1.route("/", fileRoutes);
  v1.route("/", agentRoutes);
  v1.route("/", skillsRoutes);
  v1.route("/", mcpRoutes);
  v1.route("/", trustRoutes);
  v1.route("/", desktopRoutes);
  v1.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "an API token (API_TOKEN, or one issued by POST /v1/tokens)",
  });
  // Generated from the same zod schemas that validate requests: no shape is written twice.
  v1.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "agent-runtime",
      version: "1",
      description:
        "A hosted runtime for coding agents. Paths are relative to {base_url}/v1, where {base_url} is the worker (default machine) or the worker's /machines/{machine}. Every error is application/problem+json.",
    },
    servers: [
      { url: "/v1", description: "the default machine" },
      { url: "/machines/{machine}/v1", description: "a named machine", variables: { machine: { default: "local" } } },
    ],
    security: [{ bearer: [] }],
  });
  return v1;
}

export function createApp() {
  const app = new Hono<AppEnv>();
  const v1 = v1App();
  app.get("/", dashboard);
  app.get("/assets/:name", dashboardAsset);
  for (const name of ["/sw.js", "/manifest.webmanifest", "/icon.svg"]) app.get(name, dashboardStatic);
  app.get("/v1/sidecar/:file", sidecarPackage);
  app.route("/", tunnelRoutes);
  app.route("/v1", v1);
  app.route("/machines/:machine/v1", v1);
  app.notFound(notFound);
  app.onError((err, c) => {
    if (err instanceof ProblemError) return problemResponse(err.toInit());
    if (err instanceof HTTPException) {
      if (err.res) return err.res;
      const code = err.status === 415 ? "unsupported_media_type" : err.status === 413 ? "payload_too_large" : "invalid_request";
      return problem(code, err.message || "the request could not be read");
    }
    console.error(`unhandled error on ${c.req.method} ${new URL(c.req.url).pathname}:`, err);
    return problem("internal", "the worker failed to handle this request; it has been logged");
  });
  return app;
}
