import type { Hook } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { z, ZodError } from "zod";
import type { AppEnv } from "../env";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { problem } from "../lib/problem-response";

/** A zod refusal becomes a 400 problem naming the offending fields (an unknown agent id is `unsupported_agent`). */
export function describeIssues(error: ZodError): { detail: string; errors: { field: string; message: string }[] } {
  const errors = error.issues.map((issue) => ({ field: issue.path.map(String).join(".") || "(body)", message: issue.message }));
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
  return { detail, errors };
}

// biome-ignore lint/suspicious/noExplicitAny: a hook shared by every route, whatever its input and path types
export const validationHook: Hook<any, AppEnv, any, any> = (result) => {
  if (result.success) return;
  const error: ZodError = result.error;
  const { detail, errors } = describeIssues(error);
  const agentIssue = error.issues.some((i) => i.path[0] === "agent");
  return problem(agentIssue ? "unsupported_agent" : "invalid_request", `${result.target}: ${detail}`, { errors });
};

/**
 * A JSON body parsed against a schema chosen at run time (a route whose body depends on its query), with
 * the same refusals the declared routes give: 415 for another media type, 400 naming the fields.
 */
export async function parseJsonBody<S extends z.ZodType>(c: Context<AppEnv>, schema: S): Promise<z.output<S>> {
  if (!/^application\/([a-z0-9.+-]+\+)?json\b/i.test(c.req.header("content-type") ?? "")) {
    throw new ProblemError("unsupported_media_type", "the body must be JSON (Content-Type: application/json)");
  }
  let value: unknown;
  try {
    value = await c.req.json();
  } catch {
    throw new ProblemError("invalid_request", "json: the body is not valid JSON");
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const { detail, errors } = describeIssues(parsed.error);
  throw new ProblemError("invalid_request", `json: ${detail}`, { errors });
}
