/**
 * What a team document's apply (skills, MCP servers) keeps on this machine: what it wrote where, and the
 * last document applied with the fingerprint of its targets, so that the same document applied again to
 * the same targets does nothing. Parsed when read: an unreadable file is a fresh start, and an `applied`
 * record this sidecar cannot read (written by another version) only means the next apply runs in full.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { writeFileAtomic } from "../atomic-file";

/** The last document applied: its version, the fingerprint of what it was applied to, and what came of it. */
export function appliedRecord<R extends z.ZodType>(result: R) {
  return z.object({ version: z.string(), fingerprint: z.string(), result }).optional().catch(undefined);
}

export type Applied<R> = { version: string; fingerprint: string; result: R } | undefined;

export class ManifestFile<M> {
  constructor(
    private readonly path: string,
    private readonly schema: z.ZodType<M>,
    private readonly empty: () => M,
    /** The file's mode: the MCP manifest names servers whose environment may hold secrets. */
    private readonly mode?: number,
  ) {}

  async read(): Promise<M> {
    try {
      const parsed = this.schema.safeParse(JSON.parse(await readFile(this.path, "utf8")));
      if (parsed.success) return parsed.data;
    } catch {
      // none yet, or not JSON
    }
    return this.empty();
  }

  write(manifest: M): Promise<void> {
    return writeFileAtomic(this.path, JSON.stringify(manifest, null, 2), this.mode);
  }
}

/** The result recorded for this very document and fingerprint, marked unchanged; null when it must be applied (or is forced). */
export function appliedAlready<R extends object>(applied: Applied<R>, version: string, fingerprint: string, force: boolean): (R & { unchanged: true }) | null {
  if (force || applied?.version !== version || applied.fingerprint !== fingerprint) return null;
  return { ...applied.result, unchanged: true };
}
