/** Small helpers so every route declares its bodies and errors the same way in the OpenAPI document. */
import { z } from "zod";
import { PROBLEMS, type ProblemCode } from "@agent-runtime/protocol/problems";
import { PROBLEM_CONTENT_TYPE } from "../lib/problem-response";

export const Problem = z
  .object({
    type: z.string().describe("urn:agent-runtime:error:<code>"),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
  })
  .passthrough()
  .meta({ id: "Problem", description: "RFC 9457 problem details" });

export function json<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } } as const;
}

export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } } as const;
}

/** The error responses of a route, by problem code (statuses come from the one table in protocol/problems). */
export function errors(...codes: ProblemCode[]) {
  // Each code once: a route's own list may name one every route has (permission_denied).
  const all = new Set<ProblemCode>(["token_invalid", "permission_denied", ...codes]);
  const out: Record<number, { description: string; content: { [PROBLEM_CONTENT_TYPE]: { schema: typeof Problem } } }> = {};
  for (const code of all) {
    const { status } = PROBLEMS[code];
    const prev = out[status]?.description;
    out[status] = { description: prev ? `${prev}; ${code}` : code, content: { [PROBLEM_CONTENT_TYPE]: { schema: Problem } } };
  }
  return out;
}

/** Boolean query flags as clients send them: `true`/`false`/`1`/`0`, absent meaning false. */
export const QueryFlag = z
  .enum(["true", "false", "1", "0"])
  .optional()
  .transform((v) => v === "true" || v === "1");

export const MACHINE_ERRORS = ["machine_offline", "timeout", "conflict", "invalid_request"] as const;

/** `Last-Event-ID` of an SSE reader resuming a stream: a sequence number. */
export const LastEventIdHeader = z.object({
  "last-event-id": z
    .string()
    .regex(/^\d{1,15}$/, "must be a sequence number")
    .optional(),
});
