/**
 * Which entries of an uploaded tar archive may be unpacked into a folder. Checked for the whole archive
 * before anything is written, so a refused archive changes nothing (docs/architecture.md, "Files").
 */
import { posix } from "node:path";
import { list } from "tar";

export interface TarEntryHead {
  path: string;
  type: string;
  linkpath?: string | undefined;
}

/** Kinds of entry an upload may hold; devices and FIFOs are refused. */
const ALLOWED_TYPES = new Set(["File", "OldFile", "ContiguousFile", "Directory", "SymbolicLink", "Link"]);

/** The entry's path inside the target folder, `""` for the folder itself; null when it would leave the folder. */
function inside(path: string): string | null {
  if (path.includes("\u0000") || path.startsWith("/")) return null;
  const normal = posix.normalize(path);
  if (normal === ".." || normal.startsWith("../")) return null;
  return normal === "." || normal === "./" ? "" : normal.replace(/\/$/, "");
}

/** Why this entry must not be unpacked, or null when it may. */
export function refuseTarEntry(entry: TarEntryHead): string | null {
  if (!ALLOWED_TYPES.has(entry.type)) return `'${entry.path}' is a ${entry.type}: only files, folders and links inside the folder are unpacked`;
  if (entry.path.split("/").includes("..") || inside(entry.path) === null) return `'${entry.path}' would be written outside the folder`;
  if (entry.type === "SymbolicLink" || entry.type === "Link") {
    const target = entry.linkpath ?? "";
    if (target === "" || target.startsWith("/")) return `'${entry.path}' links to '${target}', outside the folder`;
    // A symbolic link resolves from its own folder; a hard link names a path from the archive's root.
    const resolved = entry.type === "SymbolicLink" ? posix.join(posix.dirname(entry.path), target) : target;
    if (inside(resolved) === null) return `'${entry.path}' links to '${target}', outside the folder`;
  }
  return null;
}

/** The relative path an accepted entry is written at ("" for the folder itself). */
export function entryPathInside(entry: TarEntryHead): string {
  return inside(entry.path) ?? "";
}

/**
 * Every entry of a tar archive (plain, gzip), checked before anything is written: the entries to be
 * written, or the reasons (at most three) some must not be. Throws when the file is not a tar archive.
 */
export async function checkTarArchive(file: string, maxEntries: number): Promise<{ heads: TarEntryHead[]; refusals: string[] }> {
  const heads: TarEntryHead[] = [];
  const refusals: string[] = [];
  await list({
    file,
    strict: true,
    onReadEntry: (entry) => {
      const head = { path: entry.path, type: entry.type, linkpath: entry.linkpath };
      const refused = refuseTarEntry(head);
      if (refused) refusals.push(refused);
      else if (heads.length < maxEntries) heads.push(head);
      else refusals.push(`more than ${maxEntries} entries`);
      entry.resume();
    },
  });
  return { heads, refusals: refusals.slice(0, 3) };
}
