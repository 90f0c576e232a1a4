/**
 * The answer to an error a route threw, for every request (app.ts's `onError`, and the relay's message
 * before Hono: http/relay-post.ts): a ProblemError as its problem, Hono's HTTPException as its own
 * response or the problem its status means, anything else logged and a 500 problem.
 */
import { HTTPException } from "hono/http-exception";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { problem, problemResponse } from "../lib/problem-response";

export function errorAnswer(err: unknown, method: string, url: string): Response {
  if (err instanceof ProblemError) return problemResponse(err.toInit());
  if (err instanceof HTTPException) {
    if (err.res) return err.res;
    const code = err.status === 415 ? "unsupported_media_type" : err.status === 413 ? "payload_too_large" : "invalid_request";
    return problem(code, err.message || "the request could not be read");
  }
  console.error(`unhandled error on ${method} ${new URL(url).pathname}:`, err);
  return problem("internal", "the worker failed to handle this request; it has been logged");
}
