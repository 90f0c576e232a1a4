/**
 * How a resource the API names is declared: its fields, and the name under which the OpenAPI document and
 * `z.toJSONSchema` refer to it (a component of zod's global registry, `.meta({ id })`), so that each
 * declaration carries only what is its own. Its type stays beside it (`export type X = z.infer<typeof X>`):
 * TypeScript wants a type alias written out to name it.
 */
import { z } from "zod";

/** An answer or a record: a field it does not know is dropped when parsed (`z.object(shape).meta({ id })`). */
export function resource<Shape extends z.ZodRawShape>(id: string, shape: Shape) {
  return z.object(shape).meta({ id });
}

/** What a client sends: a field it does not know is refused, not dropped (`z.object(shape).strict().meta({ id })`). */
export function strictResource<Shape extends z.ZodRawShape>(id: string, shape: Shape) {
  return z.object(shape).strict().meta({ id });
}
