/**
 * Checkpoints per turn (docs/architecture.md, "Review and ship"): when a session's turn starts and when
 * it ends, its folder is snapshotted into the session's shadow repository; the changes of a turn or of
 * the whole session, one file's diff and a turn's revert are read from those snapshots by the machine's
 * git. Each session's work is done one at a time, in order; what a session has is kept in a small state
 * file beside its shadow repository, so a restarted sidecar goes on numbering its turns.
 */
import { existsSync } from "node:fs";
import { lstat, readdir, stat, unlink } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import type { z } from "zod";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { type Changes, type FileChange, type FileDiff, REVIEW_LIMITS, type RevertResult, type TurnChanges } from "@agent-runtime/protocol/review";
import { logger } from "../log";
import { AT_INDEX, FolderTooLarge, ShadowRepo, type TreeChange } from "./shadow-repo";
import { reachedThroughLinks, staysInside } from "./inside-folder";
import { type CheckpointState, CheckpointStates, checkpointKey, type SessionKey, type Turn } from "./checkpoint-states";

const log = logger("checkpoints");

/**
 * Folders that hold many projects rather than being one (the filesystem's root, a home folder, the
 * temporary folder): snapshotting them would copy everything in them, so their sessions go unchecked.
 */
export function notAProject(cwd: string): string | null {
  const folder = resolve(cwd);
  if (folder === "/" || folder === resolve(homedir()) || folder === resolve(tmpdir()) || folder === "/tmp")
    return "a root, home or temporary folder holds many projects; start the session in a project's folder to have its turns checkpointed";
  return null;
}

function summaryOf(changes: TreeChange[]): { files: number; additions: number; deletions: number } {
  return {
    files: changes.length,
    additions: changes.reduce((n, c) => n + c.additions, 0),
    deletions: changes.reduce((n, c) => n + c.deletions, 0),
  };
}

function fileChangeOf(c: TreeChange): FileChange {
  return {
    path: c.path,
    ...(c.previousPath ? { previousPath: c.previousPath } : {}),
    status: c.binary ? "binary" : c.status,
    additions: c.additions,
    deletions: c.deletions,
  };
}

export class Checkpoints {
  private readonly dataDir: string;
  private readonly states: CheckpointStates;
  /** Sessions known not to be checkpointed (`off`): their turns cost no read of their state file. */
  private readonly offKeys = new Set<string>();
  /** Each session's work in order: a snapshot never races a revert or another snapshot of it. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    dataDir: string,
    /** More files than this in a session's folder, and it is not checkpointed (REVIEW_LIMITS.maxFolderFiles). */
    private readonly maxFolderFiles: number = REVIEW_LIMITS.maxFolderFiles,
  ) {
    this.dataDir = resolve(dataDir);
    this.states = new CheckpointStates(join(this.dataDir, "checkpoints"));
  }

  /** A session's shadow repository; the sidecar's own data directory is never part of a snapshot. */
  private shadowOf(key: SessionKey, state: CheckpointState): ShadowRepo {
    const inside = relative(resolve(state.cwd), this.dataDir);
    const excluded = inside && !inside.startsWith("..") && !isAbsolute(inside) ? [inside.split(sep).join("/")] : [];
    return new ShadowRepo(this.states.dirOf(key), state.cwd, excluded, this.maxFolderFiles);
  }

  private serial<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.queues.set(key, next);
    void next
      .finally(() => {
        if (this.queues.get(key) === next) this.queues.delete(key);
      })
      .catch(() => undefined);
    return next;
  }

  /** A session started or was reattached in `cwd` (a worktree's folder, when it has one). */
  sessionOpened(key: SessionKey, cwd: string): Promise<void> {
    return this.serial(checkpointKey(key), async () => {
      const state = this.states.read(key);
      if (state && state.cwd === cwd) return;
      // Another folder is weighed afresh (one that was too large says so again at its first turn).
      this.offKeys.delete(checkpointKey(key));
      await this.states.write(
        key,
        state ? { ...state, cwd, usedAtMs: Date.now(), off: null } : { ...key, cwd, turns: [], oversize: [], usedAtMs: Date.now(), off: null },
      );
    });
  }

  /** A turn is about to reach the agent: snapshot the folder before it (its number, or null for a session never opened here). */
  turnStarting(key: SessionKey): Promise<number | null> {
    if (this.offKeys.has(checkpointKey(key))) return Promise.resolve(null);
    return this.serial(checkpointKey(key), async () => {
      const state = this.states.read(key);
      const snapshot = state ? await this.snapshotOrOff(key, state) : null;
      if (!state || !snapshot) return null;
      const { tree, oversize } = snapshot;
      const changed = oversize.filter((p) => !state.oversize.includes(p));
      state.turns.push({ before: tree, after: null, startedAtMs: Date.now(), oversize: changed });
      state.oversize = oversize;
      state.usedAtMs = Date.now();
      await this.states.write(key, state);
      return state.turns.length;
    });
  }

  /**
   * A session just started: its folder's first snapshot (every file hashed: seconds for a large folder) is
   * taken now, in the background, so its first turn's checkpoint only weighs what changed since.
   */
  prime(key: SessionKey): Promise<void> {
    return this.serial(checkpointKey(key), async () => {
      const state = this.states.read(key);
      if (state && state.turns.length === 0) await this.snapshotOrOff(key, state);
    });
  }

  /** A snapshot of the session's folder, or null when it is not checkpointed (then `off` says why, from now on). */
  private async snapshotOrOff(key: SessionKey, state: CheckpointState): Promise<{ tree: string; oversize: string[] } | null> {
    if (state.off) {
      this.offKeys.add(checkpointKey(key));
      return null;
    }
    const notProject = notAProject(state.cwd);
    if (notProject) {
      await this.states.write(key, { ...state, off: `${state.cwd} is not checkpointed: ${notProject}` });
      this.offKeys.add(checkpointKey(key));
      return null;
    }
    const shadow = this.shadowOf(key, state);
    try {
      return await shadow.snapshot(state.oversize);
    } catch (err) {
      if (!(err instanceof FolderTooLarge)) throw err;
      log.warn(`${key.sessionId}: not checkpointing ${state.cwd}: ${err.message}`);
      await shadow.remove();
      await this.states.write(key, { ...state, off: `${state.cwd} is not checkpointed: ${err.message}` });
      this.offKeys.add(checkpointKey(key));
      return null;
    }
  }

  /** The turn ended (however): snapshot the folder after it and answer its summary. */
  turnEnded(key: SessionKey): Promise<TurnChanges | null> {
    if (this.offKeys.has(checkpointKey(key))) return Promise.resolve(null);
    return this.serial(checkpointKey(key), async () => {
      const state = this.states.read(key);
      const turn = state?.turns.at(-1);
      if (!state || !turn || turn.after !== null) return null;
      const shadow = this.shadowOf(key, state);
      const { tree, oversize } = await shadow.snapshot(state.oversize);
      turn.after = tree;
      turn.oversize = [...new Set([...turn.oversize, ...oversize.filter((p) => !state.oversize.includes(p))])];
      state.oversize = oversize;
      state.usedAtMs = Date.now();
      await this.states.write(key, state);
      return { turn: state.turns.length, ...summaryOf(await shadow.changesBetween(turn.before, tree)) };
    });
  }

  /** The state of a session the caller names, or a 404 saying why there is none. */
  private known(key: SessionKey, cwd: string): CheckpointState {
    const state = this.states.read(key);
    if (state) return state;
    // A session never prompted here has no checkpoints yet: its changes are none.
    return { ...key, cwd, turns: [], oversize: [], usedAtMs: Date.now(), off: null };
  }

  private turnOf(state: CheckpointState, turn: number): z.infer<typeof Turn> {
    const found = state.turns[turn - 1];
    if (!found)
      throw new ProblemError("not_found", `the session has ${state.turns.length} checkpointed turn(s); there is no turn ${turn}`, {
        turns: state.turns.length,
      });
    return found;
  }

  /** The trees a turn (or the whole session) runs between: a turn cut short ends where the next began, or now. */
  private async range(shadow: ShadowRepo, state: CheckpointState, turn: number | undefined): Promise<{ from: string; to: string; oversize: string[] }> {
    // "Now" is the private index brought to the folder: no tree is written for a read.
    const now = async () => {
      await shadow.stage(state.oversize);
      return AT_INDEX;
    };
    if (turn === undefined) return { from: state.turns[0]!.before, to: await now(), oversize: state.oversize };
    const t = this.turnOf(state, turn);
    return { from: t.before, to: t.after ?? state.turns[turn]?.before ?? (await now()), oversize: t.oversize };
  }

  changes(key: SessionKey, cwd: string, turn?: number): Promise<Changes> {
    return this.serial(checkpointKey(key), async () => {
      const state = this.known(key, cwd);
      const empty = {
        turn: turn ?? null,
        turns: state.turns.length,
        cwd: state.cwd,
        files: [],
        truncated: false,
        totals: { files: 0, additions: 0, deletions: 0 },
        unavailable: state.off,
      };
      if (turn !== undefined) this.turnOf(state, turn);
      if (state.turns.length === 0) return empty;
      const shadow = this.shadowOf(key, state);
      const { from, to, oversize } = await this.range(shadow, state, turn);
      const changed = await shadow.changesBetween(from, to);
      const excluded: FileChange[] = [
        ...oversize.map((path) => ({
          path,
          status: "excluded" as const,
          additions: 0,
          deletions: 0,
          reason: `larger than ${REVIEW_LIMITS.maxFileBytes} bytes`,
        })),
        ...(turn === undefined ? await shadow.heavyFoldersPresent() : []).map((path) => ({
          path,
          status: "excluded" as const,
          additions: 0,
          deletions: 0,
          reason: "a dependency or build folder",
        })),
      ];
      const files = [...changed.map(fileChangeOf), ...excluded];
      await this.states.used(key, state);
      return { ...empty, files: files.slice(0, REVIEW_LIMITS.maxFiles), truncated: files.length > REVIEW_LIMITS.maxFiles, totals: summaryOf(changed) };
    });
  }

  diff(key: SessionKey, cwd: string, path: string, turn?: number): Promise<FileDiff> {
    return this.serial(checkpointKey(key), async () => {
      const state = this.known(key, cwd);
      if (turn !== undefined) this.turnOf(state, turn);
      if (state.turns.length === 0) throw new ProblemError("not_found", `'${path}' has no change in this session`);
      const shadow = this.shadowOf(key, state);
      const { from, to, oversize } = await this.range(shadow, state, turn);
      if (oversize.includes(path) || state.oversize.includes(path)) return { path, status: "excluded", diff: null, tooLarge: false, bytes: 0 };
      const change = (await shadow.changesBetween(from, to)).find((c) => c.path === path || c.previousPath === path);
      if (!change) throw new ProblemError("not_found", `'${path}' has no change ${turn ? `in turn ${turn}` : "in this session"}`);
      const file = fileChangeOf(change);
      if (change.binary) return { path: change.path, status: file.status, diff: null, tooLarge: false, bytes: 0 };
      const paths = change.previousPath ? [change.previousPath, change.path] : [change.path];
      const { text, bytes, truncated } = await shadow.diffText(from, to, paths, REVIEW_LIMITS.maxDiffBytes);
      return { path: change.path, status: file.status, diff: truncated ? null : text, tooLarge: truncated, bytes };
    });
  }

  /**
   * Put the files turn `turn` changed back as they were before it. Refused (409, naming them) when any of
   * them changed since the turn ended (a person, a later turn), unless `force`.
   */
  revert(key: SessionKey, cwd: string, turn: number, force: boolean): Promise<RevertResult> {
    return this.serial(checkpointKey(key), async () => {
      const state = this.known(key, cwd);
      const t = this.turnOf(state, turn);
      const shadow = this.shadowOf(key, state);
      // One snapshot of now: the end of a turn cut short, and what the turn's files are compared with.
      const now = (await shadow.snapshot(state.oversize)).tree;
      const from = t.before;
      const to = t.after ?? state.turns[turn]?.before ?? now;
      const changed = await shadow.changesBetween(from, to, false);
      const paths = changed.map((c) => c.path);
      const since = await shadow.differing(to, now, paths);
      if (since.length > 0 && !force) {
        throw new ProblemError(
          "conflict",
          `${since.length} file(s) changed since turn ${turn}: ${since.slice(0, 10).join(", ")}; revert with force: true to lose those changes`,
          {
            files: since,
          },
        );
      }
      const added = changed.filter((c) => c.status === "added").map((c) => c.path);
      const restored = changed.filter((c) => c.status !== "added").map((c) => c.path);
      // Checked before anything is written: `force` loses later edits, never reaches out of the folder.
      const outside = await reachedThroughLinks(state.cwd, [...restored, ...added]);
      if (outside.length > 0) {
        throw new ProblemError(
          "conflict",
          `${outside.length} file(s) of turn ${turn} are now reached through a link out of the folder: ${outside.slice(0, 10).join(", ")}; nothing was reverted`,
          { files: outside },
        );
      }
      await shadow.restore(from, restored);
      for (const path of added) await this.removeInside(state.cwd, path);
      state.usedAtMs = Date.now();
      await this.states.write(key, state);
      return { turn, restored, removed: added };
    });
  }

  /** Remove a file a turn added; never one reached through a link out of the folder (checked again, just before). */
  private async removeInside(folder: string, path: string): Promise<void> {
    if (!(await staysInside(folder, path))) return;
    const target = resolve(folder, path);
    const info = await lstat(target).catch(() => null);
    if (info && !info.isDirectory()) await unlink(target);
  }

  /** Forget a session's checkpoints (its record was purged). */
  drop(key: SessionKey): Promise<boolean> {
    return this.serial(checkpointKey(key), async () => {
      const dir = this.states.dirOf(key);
      this.offKeys.delete(checkpointKey(key));
      if (!existsSync(dir)) return false;
      await new ShadowRepo(dir, "/").remove();
      return true;
    });
  }

  /** Remove the checkpoints of sessions not used for the retention (REVIEW_LIMITS.retentionDays). */
  async sweep(now = Date.now()): Promise<number> {
    const cutoff = now - REVIEW_LIMITS.retentionDays * 86_400_000;
    let removed = 0;
    for (const name of await readdir(this.states.root).catch((): string[] => [])) {
      const file = join(this.states.root, name, "state.json");
      const used = await stat(file)
        .then((s) => s.mtimeMs)
        .catch(() => 0);
      if (used > cutoff) continue;
      await new ShadowRepo(join(this.states.root, name), "/").remove();
      removed++;
    }
    if (removed > 0) log.info(`removed the checkpoints of ${removed} session(s) unused for ${REVIEW_LIMITS.retentionDays} days`);
    return removed;
  }
}
