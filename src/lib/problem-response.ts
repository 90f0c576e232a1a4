import type { Context } from "hono";
import { problemBody, type ProblemCode, type ProblemInit } from "@agent-runtime/protocol/problems";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export function problemResponse(init: ProblemInit, headers?: HeadersInit): Response {
  const body = problemBody(init);
  const h = new Headers(headers);
  h.set("content-type", PROBLEM_CONTENT_TYPE);
  return new Response(JSON.stringify(body), { status: body.status, headers: h });
}

export function problem(code: ProblemCode, detail: string, extensions?: Record<string, unknown>): Response {
  return problemResponse({ code, detail, ...(extensions ? { extensions } : {}) });
}

/** For `app.notFound`: an unknown route is a problem too, never an HTML page. */
export function notFound(c: Context): Response {
  return problem("not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`);
}
