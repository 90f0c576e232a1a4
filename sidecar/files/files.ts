/**
 * The machine's files, as the tunnel's `fs.*` operations reach them (docs/architecture.md, "Files").
 *
 * Reads go out in pieces the worker asks for one at a time, so neither side holds a whole file. Writes
 * and tar batches are staged under the data folder piece by piece, then committed with one rename (or
 * unpacked after every entry was checked): a dropped upload, a refused archive or a crash leaves the
 * target as it was, and staged leftovers are removed when the sidecar starts.
 */
import { constants } from "node:fs";
import { copyFile, type FileHandle, lstat, mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { extract } from "tar";
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { FsStat } from "@agent-runtime/protocol/files";
import { errorText, logger } from "../log";
import { checkTarArchive, entryPathInside } from "./tar-entries";
import type { OpHandlers } from "../tunnel";

const log = logger("files");

type FsOp = Extract<keyof OpHandlers, `fs.${string}`>;

/** An upload nobody added to for this long was abandoned (its caller went away): its staged bytes are removed. */
const ABANDONED_UPLOAD_MS = 5 * 60_000;
/** How many written paths an unpacked batch lists (as sandbox-agent does). */
const LISTED_PATHS = 1024;
const MAX_TAR_ENTRIES = 100_000;

interface StagedUpload {
  file: string;
  /** Bytes taken (written, or queued behind the pieces before them): where the next piece must start. */
  accepted: number;
  /** The last piece's write: the next is written after it (pieces may arrive while one is being written). */
  writing: Promise<void>;
  touchedMs: number;
}

/** A Node file-system error's code, if it has one. */
function codeOf(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err && typeof err.code === "string" ? err.code : undefined;
}

/** A file-system failure as the problem the caller gets: 404 missing, 409 exists, 400 wrong kind, 403 refused. */
export function fsProblem(err: unknown, path: string): ProblemError {
  if (err instanceof ProblemError) return err;
  switch (codeOf(err)) {
    case "ENOENT":
      return new ProblemError("not_found", `no such file or folder: ${path}`);
    case "EEXIST":
      return new ProblemError("conflict", `already exists: ${path}`);
    case "ENOTEMPTY":
      return new ProblemError("conflict", `the folder is not empty (delete with recursive=true): ${path}`);
    case "ENOTDIR":
      return new ProblemError("invalid_request", `a part of the path is not a folder: ${path}`);
    case "EISDIR":
      return new ProblemError("invalid_request", `is a folder: ${path}`);
    case "EACCES":
    case "EPERM":
      return new ProblemError("permission_denied", `the machine's user may not do this: ${path}`);
    case "ENAMETOOLONG":
      return new ProblemError("invalid_request", `the path is too long for this machine: ${path}`);
    default:
      return new ProblemError("internal", `${path}: ${errorText(err)}`);
  }
}

/** The folders above `path`; one of them being a file is the caller's mistake (400), not a conflict. */
async function makeParents(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true }).catch((err: unknown) => {
    if (codeOf(err) === "EEXIST" || codeOf(err) === "ENOTDIR") throw new ProblemError("invalid_request", `a part of the path is not a folder: ${path}`);
    throw err;
  });
}

/**
 * A staged file renamed over `target`; the folders above it made when the rename finds them missing. True
 * when the staged name was renamed away; false when it was copied (the data folder on another file system:
 * copied next to the target first, then renamed there) and is still there to remove.
 */
async function renameOver(file: string, target: string, upload: string): Promise<boolean> {
  const renamed = () =>
    rename(file, target).then(
      () => true,
      (err: unknown) => {
        if (codeOf(err) === "EXDEV") return false;
        throw err;
      },
    );
  const done = await renamed().catch(async (err: unknown) => {
    if (codeOf(err) !== "ENOENT") throw err;
    await makeParents(target);
    return renamed();
  });
  if (done) return true;
  const beside = join(dirname(target), `.${basename(target)}.${upload}.upload`);
  try {
    await copyFile(file, beside);
    await rename(beside, target);
  } finally {
    await rm(beside, { force: true });
  }
  return false;
}

async function statOf(path: string): Promise<FsStat & { mtimeMs: number }> {
  // A link is described by what it points to; a dangling one by itself.
  const info = await stat(path).catch(async (err: unknown) => {
    if (codeOf(err) === "ENOENT") return lstat(path);
    throw err;
  });
  return {
    path,
    entryType: info.isDirectory() ? "directory" : "file",
    size: info.isDirectory() ? 0 : info.size,
    modified: info.mtime.toISOString(),
    mtimeMs: info.mtimeMs,
  };
}

/** Pieces of one upload taken before the first is stored: they are written in order (`upload`), two MiB held at most. */
export const UPLOAD_WINDOW = 2;

export class MachineFiles {
  private readonly uploads = new Map<string, StagedUpload>();
  private readonly stagingDir: string;
  private readonly sweeper: NodeJS.Timeout;
  /** Whatever a previous run left staged, being removed: the first upload waits for it. */
  private readonly cleared: Promise<void>;
  /** The staging folder, made once (not on every upload); forgotten when a staged file cannot be created in it. */
  private folder: Promise<void> | null = null;

  constructor(
    dataDir: string,
    private readonly home: string = homedir(),
  ) {
    this.stagingDir = join(dataDir, "uploads");
    // Whatever a previous run left staged belongs to calls that can never finish now.
    this.cleared = rm(this.stagingDir, { recursive: true, force: true }).catch((err: unknown) =>
      log.warn(`could not clear the staging folder ${this.stagingDir}: ${errorText(err)}`),
    );
    this.sweeper = setInterval(() => void this.sweepAbandoned(), 60_000);
    this.sweeper.unref();
  }

  /** A path as the caller gave it, made absolute: relative paths and `~/…` are taken from HOME. */
  resolvePath(path: string): string {
    if (path === "~") return this.home;
    if (path.startsWith("~/")) return join(this.home, path.slice(2));
    return isAbsolute(path) ? resolve(path) : resolve(this.home, path);
  }

  handlers(): Pick<OpHandlers, FsOp> {
    return {
      "fs.entries": (args) => this.entries(args.path),
      "fs.stat": async ({ path }) => {
        const target = this.resolvePath(path);
        const { mtimeMs: _mtime, ...info } = await statOf(target).catch((err: unknown) => {
          throw fsProblem(err, target);
        });
        return info;
      },
      "fs.mkdir": async ({ path }) => {
        const target = this.resolvePath(path);
        await mkdir(target, { recursive: true }).catch((err: unknown) => {
          throw fsProblem(err, target);
        });
        return { path: target };
      },
      "fs.delete": (args) => this.delete(args),
      "fs.move": (args) => this.move(args),
      "fs.read": (args) => this.read(args),
      "fs.upload": (args) => this.upload(args),
      "fs.commit": (args) => this.commit(args),
      "fs.unpack": (args) => this.unpack(args),
      "fs.abort": async ({ upload }) => ({ aborted: await this.forget(upload) }),
    };
  }

  private async entries(path: string | undefined): Promise<OpResult<"fs.entries">> {
    const folder = this.resolvePath(path ?? "~");
    try {
      const info = await stat(folder);
      if (!info.isDirectory()) throw new ProblemError("invalid_request", `not a folder: ${folder}`);
      const names = (await readdir(folder)).sort();
      const truncated = names.length > LIMITS.maxDirEntries;
      const entries = await Promise.all(
        names.slice(0, LIMITS.maxDirEntries).map(async (name) => {
          const { mtimeMs: _mtime, ...entry } = await statOf(join(folder, name));
          return { ...entry, name };
        }),
      );
      return { entries, truncated };
    } catch (err) {
      throw fsProblem(err, folder);
    }
  }

  private async delete({ path, recursive }: OpArgs<"fs.delete">): Promise<OpResult<"fs.delete">> {
    const target = this.resolvePath(path);
    try {
      const info = await lstat(target);
      if (info.isDirectory()) await (recursive ? rm(target, { recursive: true }) : rmdir(target));
      else await unlink(target);
      return { path: target };
    } catch (err) {
      throw fsProblem(err, target);
    }
  }

  private async move({ from, to, overwrite }: OpArgs<"fs.move">): Promise<OpResult<"fs.move">> {
    const source = this.resolvePath(from);
    const target = this.resolvePath(to);
    try {
      await lstat(source);
    } catch (err) {
      throw fsProblem(err, source);
    }
    const existing = await lstat(target).catch(() => null);
    if (existing && !overwrite) throw new ProblemError("conflict", `already exists: ${target} (move with overwrite: true to replace it)`);
    try {
      await makeParents(target);
      if (existing?.isDirectory()) await rm(target, { recursive: true });
      await rename(source, target);
      return { from: source, to: target };
    } catch (err) {
      throw fsProblem(err, codeOf(err) === "ENOENT" ? source : target);
    }
  }

  private async read({ path, offset, length, expect }: OpArgs<"fs.read">): Promise<OpResult<"fs.read">> {
    const target = this.resolvePath(path);
    const handle = await open(target, constants.O_RDONLY).catch((err: unknown) => {
      throw fsProblem(err, target);
    });
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw new ProblemError("invalid_request", `is a folder: ${target}`);
      if (!info.isFile()) throw new ProblemError("invalid_request", `not a regular file: ${target}`);
      if (offset === 0 && info.size > LIMITS.maxFileBytes) {
        throw new ProblemError("payload_too_large", `${target} is ${info.size} bytes; files are read up to ${LIMITS.maxFileBytes} bytes`);
      }
      if (expect && (expect.size !== info.size || expect.mtimeMs !== info.mtimeMs)) {
        throw new ProblemError("conflict", `${target} changed while it was being read`);
      }
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, info.size - offset)));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      return { path: target, size: info.size, mtimeMs: info.mtimeMs, bytes: buffer.subarray(0, bytesRead) };
    } finally {
      await handle.close();
    }
  }

  /**
   * One piece of an upload. The worker may send the next piece before this one is written: each is
   * taken at the offset after the last one taken and written after it, in order. A piece whose write
   * failed fails every piece queued behind it (the worker then aborts the upload).
   */
  private async upload({ upload, offset, bytes }: OpArgs<"fs.upload">, modeOf?: () => Promise<number>): Promise<OpResult<"fs.upload">> {
    let staged = this.uploads.get(upload);
    if (!staged) {
      if (offset !== 0) throw new ProblemError("conflict", `upload ${upload} is unknown here (it was abandoned, or the sidecar restarted); start it again`);
      staged = { file: join(this.stagingDir, upload), accepted: 0, writing: this.stagingFolder(), touchedMs: Date.now() };
      this.uploads.set(upload, staged);
    }
    if (offset !== staged.accepted) throw new ProblemError("conflict", `upload ${upload} is at byte ${staged.accepted}, not ${offset}`);
    if (staged.accepted + bytes.length > LIMITS.maxFileBytes) {
      await this.forget(upload);
      throw new ProblemError("payload_too_large", `uploads are limited to ${LIMITS.maxFileBytes} bytes`);
    }
    staged.accepted += bytes.length;
    const into = staged;
    const written = into.writing.then(async () => {
      const handle = await this.openStaged(into.file, offset);
      try {
        await handle.write(bytes);
        // The last piece of a commit: the file gets the mode it will have on its open handle (no chmod by path after).
        if (modeOf) await handle.chmod(await modeOf());
      } finally {
        await handle.close();
      }
      into.touchedMs = Date.now();
    });
    into.writing = written;
    await written;
    return { received: offset + bytes.length };
  }

  /**
   * The staged bytes become the file at `path` in one rename: readers see the old file or the new one. The
   * target is looked at while the last piece is written (a folder is refused; a file's mode is kept, a new
   * one gets 0644, set on the staged file's handle; setuid, setgid and sticky are not kept); its parent folders are made when the rename says they
   * are missing. Once renamed, the staged name is gone: nothing is left to remove.
   */
  private async commit({ upload, path, offset, bytes }: OpArgs<"fs.commit">): Promise<OpResult<"fs.commit">> {
    const target = this.resolvePath(path);
    const existing = stat(target).catch(() => null);
    const modeOf = async () => {
      const info = await existing;
      if (info?.isDirectory()) throw new ProblemError("invalid_request", `is a folder: ${target}`);
      // Its permissions, not setuid, setgid or sticky: new content written from afar is not made privileged.
      return info ? info.mode & 0o777 : 0o644;
    };
    let renamed = false;
    try {
      const staged = await this.staged({ upload, offset, bytes }, modeOf);
      renamed = await renameOver(staged.file, target, upload);
      // Every piece taken is written by now: the last one's write, awaited by `staged`, came after them.
      return { path: target, bytesWritten: staged.accepted };
    } catch (err) {
      throw fsProblem(err, target);
    } finally {
      await this.forget(upload, renamed);
    }
  }

  /** A staged tar archive unpacked into `path`, after every entry was checked: a refused archive writes nothing. */
  private async unpack({ upload, path, offset, bytes }: OpArgs<"fs.unpack">): Promise<OpResult<"fs.unpack">> {
    const staged = await this.staged({ upload, offset, bytes });
    const folder = this.resolvePath(path);
    try {
      const { heads, refusals } = await checkTarArchive(staged.file, MAX_TAR_ENTRIES).catch((err: unknown) => {
        throw new ProblemError("invalid_request", `the body is not a readable tar archive: ${errorText(err)}`);
      });
      if (refusals.length > 0) throw new ProblemError("invalid_request", `the archive was not unpacked: ${refusals.join("; ")}`);
      const existing = await stat(folder).catch(() => null);
      if (existing && !existing.isDirectory()) throw new ProblemError("invalid_request", `not a folder: ${folder}`);
      await mkdir(folder, { recursive: true });
      await extract({ file: staged.file, cwd: folder, strict: true, preservePaths: false, unlink: true });
      const written = heads.map(entryPathInside).filter((relative) => relative !== "");
      return { paths: written.slice(0, LISTED_PATHS).map((relative) => join(folder, relative)), truncated: written.length > LISTED_PATHS };
    } catch (err) {
      throw fsProblem(err, folder);
    } finally {
      await this.forget(upload);
    }
  }

  /** The upload with its last piece (sent with the commit or the unpack) written: the whole body, staged. */
  private async staged(last: OpArgs<"fs.upload">, modeOf?: () => Promise<number>): Promise<StagedUpload> {
    await this.upload(last, modeOf); // an empty last piece of a new upload stages an empty file
    const created = this.uploads.get(last.upload);
    if (!created) throw new ProblemError("internal", `upload ${last.upload} could not be staged`);
    return created;
  }

  /** An upload ended: its staged file removed, unless it was renamed into place (then its name is gone already). */
  private async forget(upload: string, renamed = false): Promise<boolean> {
    const staged = this.uploads.get(upload);
    if (!staged) return false;
    this.uploads.delete(upload);
    await staged.writing.catch(() => undefined); // a piece still being written must not recreate the file after it is removed
    if (!renamed) await rm(staged.file, { force: true });
    return true;
  }

  /** The staging folder, made on the first upload (after a previous run's leftovers are cleared), then remembered. */
  private stagingFolder(): Promise<void> {
    this.folder ??= this.cleared
      .then(() => mkdir(this.stagingDir, { recursive: true, mode: 0o700 }))
      .then(
        () => undefined,
        (err: unknown) => {
          this.folder = null; // tried again by the next upload
          throw err;
        },
      );
    return this.folder;
  }

  /** A staged file opened for a piece: its first piece creates it; a staging folder removed since it was made is made again. */
  private async openStaged(file: string, offset: number): Promise<FileHandle> {
    const flags = offset === 0 ? "w" : "a";
    return open(file, flags, 0o600).catch(async (err: unknown) => {
      if (offset !== 0 || codeOf(err) !== "ENOENT") throw err;
      this.folder = null;
      await this.stagingFolder();
      return open(file, flags, 0o600);
    });
  }

  private async sweepAbandoned(): Promise<void> {
    const now = Date.now();
    for (const [upload, staged] of this.uploads) {
      if (now - staged.touchedMs < ABANDONED_UPLOAD_MS) continue;
      log.info(`removing upload ${upload}: nothing was added for ${ABANDONED_UPLOAD_MS / 1000} s`);
      await this.forget(upload);
    }
  }

  dispose(): void {
    clearInterval(this.sweeper);
  }
}
