import type { Hook } from "@hono/zod-openapi";
import type { ZodError } from "zod";
import type { AppEnv } from "../env";
import { problem } from "./problem";

/** A zod refusal becomes a 400 problem naming the offending fields (an unknown agent id is `unsupported_agent`). */
export function describeIssues(error: ZodError): { detail: string; errors: { field: string; message: string }[] } {
  const errors = error.issues.map((issue) => ({ field: issue.path.map(String).join(".") || "(body)", message: issue.message }));
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
  return { detail, errors };
}

// biome-ignore lint/suspicious/noExplicitAny: a hook shared by every route, whatever its input and path types
export const validationHook: Hook<any, AppEnv, any, any> = (result) => {
  if (result.success) return;
  const { detail, errors } = describeIssues(result.error as ZodError);
  const agentIssue = (result.error as ZodError).issues.some((i) => i.path[0] === "agent");
  return problem(agentIssue ? "unsupported_agent" : "invalid_request", `${result.target}: ${detail}`, { errors });
};
