/**
 * The route declaration helper in-process: the errors a route declares from what it is (its input, its
 * JSON body, its machine) and its own problems, its access in the OpenAPI entry, and the guard and the
 * validation it declares at work on a real request. The real routes are exercised in test/*.test.ts.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { AppEnv } from "../env";
import { answeredProblems, apiRoute } from "./api-route";
import { json, jsonBody } from "./openapi";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { validationHook } from "./validation";

const Thing = z.object({ name: z.string(), size: z.number().int() });

function described(app: OpenAPIHono<AppEnv>, path: string, method: "get" | "post" | "delete") {
  const operation = app.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "t", version: "1" } }).paths?.[path]?.[method];
  const responses = Object.fromEntries(Object.entries(operation?.responses ?? {}).map(([status, r]) => [status, "description" in r ? r.description : ""]));
  return { operation, responses };
}

describe("apiRoute", () => {
  it("declares 401 and 403 for every route, 400 for input, 415 for a JSON body, a machine's 400 and 404, then the route's own", () => {
    expect(answeredProblems({ role: "viewer", machine: false }, undefined)).toEqual([]);
    expect(answeredProblems({ role: "viewer", machine: false }, { query: z.object({ n: z.string() }) })).toEqual(["invalid_request"]);
    expect(answeredProblems({ role: "member", machine: true }, undefined)).toEqual(["invalid_request", "not_found"]);
    expect(answeredProblems({ role: "viewer", machine: false, withDirectory: { role: "viewer", machine: true } }, undefined)).toEqual([
      "invalid_request",
      "not_found",
    ]);
    expect(answeredProblems({ role: "member", machine: "session" }, { body: jsonBody(Thing) })).toEqual([
      "invalid_request",
      "not_found",
      "unsupported_media_type",
    ]);
    // A body of another media type is refused by its own route, which says so (a file's bytes, a tar archive).
    expect(answeredProblems({ role: "member", machine: false }, { body: { content: { "application/x-tar": { schema: z.string() } } } })).toEqual([
      "invalid_request",
    ]);

    const app = new OpenAPIHono<AppEnv>();
    app.openapi(
      apiRoute("post", "/things/{id}", {
        summary: "Make a thing",
        access: { role: "member", machine: false },
        request: { params: z.object({ id: z.string() }), body: jsonBody(Thing) },
        answers: { 201: json(Thing, "the thing") },
        problems: ["conflict", "not_found"],
      }),
      async function makeThing(c) {
        return c.json(c.req.valid("json"), 201);
      },
    );
    app.openapi(
      apiRoute("get", "/things", {
        summary: "Every thing",
        access: { role: "viewer", machine: false },
        answers: { 200: json(z.array(Thing), "the things") },
      }),
      async function listThings(c) {
        return c.json([], 200);
      },
    );
    const made = described(app, "/things/{id}", "post");
    expect(made.operation?.["x-required-role"]).toBe("member");
    expect(made.operation?.["x-machine-scoped"]).toBe(false);
    expect(made.operation?.summary).toBe("Make a thing");
    expect(made.responses).toEqual({
      "201": "the thing",
      "400": "invalid_request",
      "401": "token_invalid",
      "403": "permission_denied",
      "404": "not_found",
      "409": "conflict",
      "415": "unsupported_media_type",
    });
    // Reading nothing, it declares nothing it cannot answer.
    expect(described(app, "/things", "get").responses).toEqual({ "200": "the things", "401": "token_invalid", "403": "permission_denied" });
  });

  it("guards and validates as it declares: the role first, then the body", async () => {
    const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
    app.onError((err, c) => (err instanceof ProblemError ? c.json({ code: err.code }, 403) : c.json({ error: String(err) }, 500)));
    app.use("*", async (c, next) => {
      c.set("identity", { name: "t", role: c.req.header("x-role") === "member" ? "member" : "viewer", machines: "*", tokenId: null, expiresAtMs: null });
      await next();
    });
    app.openapi(
      apiRoute("post", "/things", {
        summary: "Make a thing",
        access: { role: "member", machine: false },
        request: { body: jsonBody(Thing) },
        answers: { 201: json(Thing, "the thing") },
      }),
      async function makeThing(c) {
        return c.json(c.req.valid("json"), 201);
      },
    );
    const post = (role: string, body: unknown) =>
      app.request("/things", { method: "POST", headers: { "content-type": "application/json", "x-role": role }, body: JSON.stringify(body) });
    const refused = await post("viewer", { name: "a", size: 1 });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ code: "permission_denied" });
    expect((await post("member", { name: "a" })).status).toBe(400);
    const made = await post("member", { name: "a", size: 1 });
    expect(made.status).toBe(201);
    expect(await made.json()).toEqual({ name: "a", size: 1 });
  });
});
