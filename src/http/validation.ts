import type { Hook } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { z, ZodError } from "zod";
import type { AppEnv } from "../env";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { describeIssues } from "@agent-runtime/protocol/issues";
import { problem } from "../lib/problem-response";

export { describeIssues };

/** A zod refusal becomes a 400 problem naming the offending fields (an unknown agent id is `unsupported_agent`). */
// biome-ignore lint/suspicious/noExplicitAny: a hook shared by every route, whatever its input and path types
export const validationHook: Hook<any, AppEnv, any, any> = (result) => {
  if (result.success) return;
  return validationRefusal(result.target, result.error);
};

/** The 400 of a declared route whose `target` (query, param, json, ...) its schema refused. */
export function validationRefusal(target: string, error: ZodError): Response {
  const { detail, errors } = describeIssues(error);
  const agentIssue = error.issues.some((i) => i.path[0] === "agent");
  return problem(agentIssue ? "unsupported_agent" : "invalid_request", `${target}: ${detail}`, { errors });
}

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

/** What `@hono/zod-openapi`'s media type gate lets through as a JSON body (so a route reading its body itself refuses the same). */
const JSON_REQUEST = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

/** A media type `@hono/zod-openapi` takes as a JSON body's. */
export function isJsonRequestType(contentType: string): boolean {
  return JSON_REQUEST.test(contentType);
}

/**
 * A JSON body as its text, for a route that hands the text on and has it read where it is used (the
 * relay: docs/architecture.md, "The relay's message as text"). The media type is refused as a
 * declared body's is (415 for another one, or for a body without one); a request with neither is read as
 * `{}`, as a declared body is, so that the schema names what is missing. A body over the limit is the
 * limit's 413 (read once, through it).
 */
export async function jsonBodyText(c: Context<AppEnv>): Promise<string> {
  const contentType = c.req.header("content-type");
  const unsupported = () => new ProblemError("unsupported_media_type", "Unsupported Media Type");
  if (contentType && !isJsonRequestType(contentType)) throw unsupported();
  const text = await c.req.text();
  if (contentType) return text;
  if (text.length > 0) throw unsupported();
  return "{}";
}
