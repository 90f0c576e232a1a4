/**
 * Unpacking a registry agent's binary distribution: `.tar.gz`/`.tgz`/`.tar`, `.tar.bz2`/`.tbz2`, `.zip`,
 * or a raw binary. Every entry is checked before anything is written, with the same rules as a file batch
 * (sidecar/files/tar-entries.ts): nothing outside the folder, no link out of it, no devices. The caller unpacks
 * into a staging folder it renames into place, so a refused or failed archive leaves nothing.
 */
import { chmod, copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { unzipSync } from "fflate";
import Bunzip from "seek-bzip";
import { extract } from "tar";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { errorText } from "../log";
import { checkTarArchive, entryPathInside, refuseTarEntry } from "../files/tar-entries";

/** An agent's archive holds its program and what it needs: a bound on entries, not on sizes. */
const MAX_ENTRIES = 100_000;

export type ArchiveKind = "tar" | "tar.bz2" | "zip" | "raw";

/** What the archive is, from its address (as the registry's FORMAT.md lists them). */
export function archiveKind(url: string): ArchiveKind {
  const path = new URL(url).pathname.toLowerCase();
  if (/\.(tar\.gz|tgz|tar)$/.test(path)) return "tar";
  if (/\.(tar\.bz2|tbz2)$/.test(path)) return "tar.bz2";
  if (path.endsWith(".zip")) return "zip";
  return "raw";
}

const refused = (reasons: string[]) => new ProblemError("package_unavailable", `the agent's archive was not unpacked: ${reasons.slice(0, 3).join("; ")}`);

/** Unpacks `file` (downloaded from `url`) into the empty folder `dest`; `cmd` is the program a raw binary becomes. */
export async function unpackArchive(file: string, url: string, dest: string, cmd: string): Promise<void> {
  const kind = archiveKind(url);
  await mkdir(dest, { recursive: true });
  if (kind === "raw") {
    const target = join(dest, cmd);
    const problem = refuseTarEntry({ path: cmd, type: "File" });
    if (problem) throw refused([problem]);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
    return;
  }
  if (kind === "zip") return unpackZip(file, dest);
  let tarFile = file;
  if (kind === "tar.bz2") {
    tarFile = `${file}.tar`;
    try {
      await writeFile(tarFile, Bunzip.decode(await readFile(file)));
    } catch (err) {
      throw new ProblemError("install_failed", `the agent's archive is not a readable .tar.bz2: ${errorText(err)}`);
    }
  }
  const { refusals } = await checkTarArchive(tarFile, MAX_ENTRIES).catch((err: unknown) => {
    throw new ProblemError("install_failed", `the agent's archive is not a readable tar archive: ${errorText(err)}`);
  });
  if (refusals.length > 0) throw refused(refusals);
  await extract({ file: tarFile, cwd: dest, strict: true, preservePaths: false, unlink: true });
}

/** A zip carries no links fflate reads as such (a link would come out as a small file): names are checked, modes set by the caller. */
async function unpackZip(file: string, dest: string): Promise<void> {
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(new Uint8Array(await readFile(file)));
  } catch (err) {
    throw new ProblemError("install_failed", `the agent's archive is not a readable zip: ${errorText(err)}`);
  }
  const names = Object.keys(entries);
  const reasons = names.map((path) => refuseTarEntry({ path, type: path.endsWith("/") ? "Directory" : "File" })).filter((r): r is string => r !== null);
  if (names.length > MAX_ENTRIES) reasons.push(`more than ${MAX_ENTRIES} entries`);
  if (reasons.length > 0) throw refused(reasons);
  for (const name of names) {
    const relative = entryPathInside({ path: name, type: "File" });
    if (relative === "") continue;
    const target = join(dest, relative);
    if (name.endsWith("/")) await mkdir(target, { recursive: true });
    else {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, entries[name]!);
    }
  }
}

/** The program must run: a zip or a raw download carries no mode. */
export async function makeExecutable(path: string): Promise<void> {
  await chmod(path, 0o755);
}
