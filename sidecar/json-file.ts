/**
 * The sidecar's JSON files read through their schemas, never cast (docs/architecture.md, "Storage"): a
 * file an older sidecar wrote is read when its schema accepts it, or refused with an UnreadableFile
 * naming the file and what does not fit. A missing file is the caller's to handle (its ENOENT is thrown
 * as it is).
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { z } from "zod";

/** A file (or a JSON text) this release cannot read. */
export class UnreadableFile extends Error {
  override name = "UnreadableFile";
}

/** JSON text read as `schema`; `where` names it in the error. */
export function parseJsonText<S extends z.ZodType>(text: string, schema: S, where: string): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UnreadableFile(`${where}: not JSON`);
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new UnreadableFile(`${where}: not of the shape this release reads (${z.prettifyError(parsed.error).replace(/\s*\n\s*/g, " ")})`);
}

export async function readJsonFile<S extends z.ZodType>(path: string, schema: S): Promise<z.output<S>> {
  return parseJsonText(await readFile(path, "utf8"), schema, path);
}

export function readJsonFileSync<S extends z.ZodType>(path: string, schema: S): z.output<S> {
  return parseJsonText(readFileSync(path, "utf8"), schema, path);
}

/** What the sidecar reads of a package's package.json (an installed agent's, or the one npm wrote). */
export const PackageJson = z.looseObject({
  name: z.string().optional(),
  engines: z.looseObject({ node: z.string().optional() }).optional(),
  dependencies: z.record(z.string(), z.string()).optional(),
  bin: z.union([z.string(), z.record(z.string(), z.string())]).optional(),
});
