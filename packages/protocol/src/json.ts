/**
 * JSON text from the other side (an agent's answer, a process's end) read through a schema, for a caller
 * to whom text that is not JSON, or not of that shape, simply means "not this": it passes the text on
 * untouched or answers no. Where such text is an error to report, parse it and say why instead.
 */
import type { z } from "zod";

/** The text's value as `schema` reads it, or undefined when it is not JSON or not of that shape. */
export function jsonAs<S extends z.ZodType>(text: string, schema: S): z.output<S> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** A JSON object: not null, not an array. The light checks read their fields from one, the dashboard its answers' parts. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
