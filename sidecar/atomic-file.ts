/** Writing a small file whole: under a temporary name, then renamed, so a crash leaves the old file or the new one. */
import { renameSync, writeFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

export async function writeFileAtomic(path: string, text: string, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const staged = `${path}.${process.pid}.tmp`;
  await writeFile(staged, text, { mode });
  await rename(staged, path);
}

/**
 * The same, at once, for a record that must be on disk before the caller goes on (the children a
 * sidecar started: it may be killed the next instant). The folder must exist.
 */
export function writeFileAtomicSync(path: string, text: string, mode = 0o644): void {
  const staged = `${path}.${process.pid}.tmp`;
  writeFileSync(staged, text, { mode });
  renameSync(staged, path);
}
