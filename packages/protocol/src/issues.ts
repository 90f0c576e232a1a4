/** A zod refusal in words, the same wherever it is answered: the worker's routes and the machine's object (the relay's body). */
import type { ZodError } from "zod";

/** Each issue with the field it is about (`(body)` for the whole), and all of them as one sentence. */
export function describeIssues(error: ZodError): { detail: string; errors: { field: string; message: string }[] } {
  const errors = error.issues.map((issue) => ({ field: issue.path.map(String).join(".") || "(body)", message: issue.message }));
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
  return { detail, errors };
}
