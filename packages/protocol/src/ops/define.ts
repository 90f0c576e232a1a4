/**
 * What every operation of the tunnel declares (docs/architecture.md, "Frames"): how long the worker waits
 * for it, the schema of its arguments (parsed by the sidecar) and of its result (parsed by the worker),
 * and whether it changes nothing. The operations themselves are declared by feature, beside this file.
 */
import { z } from "zod";
import type { ProblemCode } from "../problems";

export interface OpDefinition {
  deadlineMs: number;
  args: z.ZodType;
  result: z.ZodType;
  /**
   * Changes nothing: its answer is not remembered once sent (a file's piece is a megabyte), and a call
   * re-sent after a reconnect simply runs again. Every other operation's answer is remembered, so it is
   * never run twice.
   */
  readOnly?: true;
  /**
   * What the machine answers it with besides the refusals every call may meet (offline, timeout, conflict,
   * invalid request): a route that relays the operation declares these in the OpenAPI document.
   */
  problems?: readonly ProblemCode[];
}

/** Bytes an operation sends or answers: the payload of a binary frame, set on `args.bytes` or `value.bytes`. */
export const Bytes = z.instanceof(Uint8Array);

/** A call's, a subscription's or a server's id. */
export const Id = z.string().min(1).max(256);
export const Nothing = z.object({}).strict();
export const Deleted = z.object({ deleted: z.boolean() });

// How long the worker waits for an operation's answer, unless a setting says otherwise (the agent's
// turn: ACP_TIMEOUT_MS; an install: INSTALL_TIMEOUT_MS; a process run: its own timeout).
export const HALF_MINUTE = 30_000;
export const MINUTE = 60_000;

/** The first few issues of a refusal, each with where it is: enough to see which side is out of date. */
export function issuesText(error: z.ZodError, root: string): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || root}: ${i.message}`)
    .join("; ");
}
