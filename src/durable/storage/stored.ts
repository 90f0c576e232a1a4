/**
 * Everything an object reads back from its storage is parsed through a schema, never cast
 * (docs/architecture.md, "Storage"): a key-value entry, an SQL row, a JSON column. What an older release
 * wrote is either read (its schema accepts it: a column a migration added reads as null, a field added
 * later is optional or has its default) or refused with an `UnreadableRecord` naming the store and what
 * does not fit, never handed on as a value of the wrong shape.
 */
import { z } from "zod";

/** A stored record this release cannot read. */
export class UnreadableRecord extends Error {
  override name = "UnreadableRecord";
}

/** The value as `schema` reads it, or an UnreadableRecord that says where it came from and what does not fit. */
export function parseStored<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = z.prettifyError(parsed.error).replace(/\s*\n\s*/g, " ");
  throw new UnreadableRecord(
    `${where}: stored data this release cannot read (${issues}); it was written by a release whose shape has no migration to this one`,
  );
}

function parseJsonText(text: string, ctx: z.RefinementCtx): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return value;
  } catch {
    ctx.addIssue({ code: "custom", message: "not JSON" });
    return z.NEVER;
  }
}

/** A TEXT column that holds JSON, read as `schema` (in a row's schema: `target: jsonText(SubscriptionTarget)`). */
export function jsonText<S extends z.ZodType>(schema: S): z.ZodPipe<z.ZodPipe<z.ZodString, z.ZodTransform<unknown, string>>, S> {
  return z.string().transform(parseJsonText).pipe(schema);
}

/**
 * A JSON column read back through its schema: what this object wrote, never cast. One that does not read
 * (not JSON, or not of the shape) is null, as if the column were empty: the record it belongs to is still
 * listed (a session, a machine), with that one field unknown.
 */
export function parsedOr<S extends z.ZodType>(schema: S, text: string | null): z.output<S> | null {
  if (text === null) return null;
  const parsed = jsonText(schema).safeParse(text);
  return parsed.success ? parsed.data : null;
}

/** Values an SQL statement binds. */
export type SqlBinding = ArrayBuffer | string | number | null;

/** Where a row came from, for the error: the statement's first table. */
function source(query: string): string {
  return `a row of ${/\bFROM\s+(\w+)/i.exec(query)?.[1] ?? "a query"}`;
}

/**
 * Write a row whole, its columns named by its keys: `replace` (INSERT OR REPLACE) for a record written
 * again as it changes, `insert` for one that must be new (a primary key taken is an error).
 */
export function writeRow(sql: SqlStorage, table: string, row: Record<string, SqlBinding>, mode: "replace" | "insert" = "replace"): void {
  const columns = Object.keys(row);
  sql.exec(
    `${mode === "replace" ? "INSERT OR REPLACE" : "INSERT"} INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    ...Object.values(row),
  );
}

/** Every row `query` answers, each read as `schema`. */
export function rows<S extends z.ZodType>(sql: SqlStorage, schema: S, query: string, ...bindings: SqlBinding[]): z.output<S>[] {
  return sql
    .exec(query, ...bindings)
    .toArray()
    .map((row) => parseStored(schema, row, source(query)));
}

/** The first row `query` answers, read as `schema`; null when there is none. */
export function firstRow<S extends z.ZodType>(sql: SqlStorage, schema: S, query: string, ...bindings: SqlBinding[]): z.output<S> | null {
  const row = sql.exec(query, ...bindings).toArray()[0];
  return row === undefined ? null : parseStored(schema, row, source(query));
}

/** The one row `query` answers (an aggregate: `SELECT COUNT(*) AS n …`), read as `schema`. */
export function oneRow<S extends z.ZodType>(sql: SqlStorage, schema: S, query: string, ...bindings: SqlBinding[]): z.output<S> {
  return parseStored(schema, sql.exec(query, ...bindings).one(), source(query));
}

/** A count or a minimum: the one column `query` answers as `AS n`. */
export const Count = z.object({ n: z.number() });
/** `SELECT MIN(…) AS at`: null when no row is there. */
export const Earliest = z.object({ at: z.number().nullable() });

/** A key-value entry read as `schema`; undefined when the key holds nothing. */
export async function getStored<S extends z.ZodType>(storage: DurableObjectStorage, key: string, schema: S): Promise<z.output<S> | undefined> {
  const value: unknown = await storage.get(key);
  return value === undefined ? undefined : parseStored(schema, value, `the stored "${key}"`);
}

/** The entries of these keys that hold something, each read as `schema`. */
export async function getStoredMany<S extends z.ZodType>(storage: DurableObjectStorage, keys: string[], schema: S): Promise<Map<string, z.output<S>>> {
  const found: Map<string, unknown> = await storage.get(keys);
  return new Map([...found].map(([key, value]) => [key, parseStored(schema, value, `the stored "${key}"`)]));
}

/** The entries under a prefix (key order), each read as `schema`. */
export async function listStored<S extends z.ZodType>(storage: DurableObjectStorage, prefix: string, schema: S): Promise<Map<string, z.output<S>>> {
  const found: Map<string, unknown> = await storage.list({ prefix });
  return new Map([...found].map(([key, value]) => [key, parseStored(schema, value, `the stored "${key}"`)]));
}

/** The synchronous key-value API's entries under a prefix (key order), each read as `schema`. */
export function listStoredSync<S extends z.ZodType>(kv: SyncKvStorage, prefix: string, schema: S): [string, z.output<S>][] {
  return [...kv.list({ prefix })].map(([key, value]) => [key, parseStored(schema, value, `the stored "${key}"`)]);
}

/** The synchronous key-value API's entry, read as `schema`; undefined when the key holds nothing. */
export function getStoredSync<S extends z.ZodType>(kv: SyncKvStorage, key: string, schema: S): z.output<S> | undefined {
  const value: unknown = kv.get(key);
  return value === undefined ? undefined : parseStored(schema, value, `the stored "${key}"`);
}
