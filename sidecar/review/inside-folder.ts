/**
 * Where review may write or remove (docs/architecture.md, "Review and ship"): a path of the session's folder
 * is acted on only when every folder on the way to it, component by component, is in the folder. A
 * component that is a symbolic link is followed only to see where it leads: a link out of the folder (an
 * agent may have replaced `sub` by a link to `~/.ssh` after a turn added `sub/new.txt`) makes the path one
 * review never writes or removes through.
 */
import { lstat, realpath } from "node:fs/promises";
import { join, relative, resolve, sep } from "node:path";

function isInside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Does writing or removing `path` (relative to `folder`) stay in the folder, whatever links are on the way? */
export async function staysInside(folder: string, path: string): Promise<boolean> {
  const start = resolve(folder);
  const target = resolve(start, path);
  if (target === start || !isInside(start, target)) return false;
  const root = await realpath(start).catch(() => start);
  const parents = relative(start, target).split(sep).slice(0, -1);
  let at = root;
  for (const part of parents) {
    at = join(at, part);
    const info = await lstat(at).catch(() => null);
    // Nothing there (git makes real folders from here on) or a file where a folder was (git replaces it):
    // nothing further is followed.
    if (!info || (!info.isDirectory() && !info.isSymbolicLink())) return true;
    if (info.isSymbolicLink()) {
      const real = await realpath(at).catch(() => null);
      if (!real || !isInside(root, real)) return false;
      at = real;
    }
  }
  return true;
}

/** The paths among `paths` that review must not act on: each reached through a link out of the folder. */
export async function reachedThroughLinks(folder: string, paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) if (!(await staysInside(folder, path))) out.push(path);
  return out;
}
