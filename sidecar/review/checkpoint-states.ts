/**
 * Where each session's checkpoint state lives: a small JSON file beside its shadow repository, in a folder
 * named by the session's hashed key (docs/architecture.md, "Review and ship"). A restarted sidecar reads
 * it back and goes on numbering the session's turns; an unreadable file starts the session again.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../atomic-file";
import { logger } from "../log";

const log = logger("checkpoints");

export const Turn = z.object({ before: z.string(), after: z.string().nullable(), startedAtMs: z.number(), oversize: z.array(z.string()) });
export const CheckpointState = z.object({
  agent: z.string(),
  sessionId: z.string(),
  cwd: z.string(),
  turns: z.array(Turn),
  oversize: z.array(z.string()),
  usedAtMs: z.number(),
  /** Why this session is not checkpointed (its folder is too large), or null. */
  off: z.string().nullable().default(null),
});
export type CheckpointState = z.infer<typeof CheckpointState>;

export interface SessionKey {
  agent: string;
  sessionId: string;
}

/** A session's folder name in the data directory: its agent and ACP id, hashed (ids are any text). */
export function checkpointKey({ agent, sessionId }: SessionKey): string {
  return createHash("sha256").update(`${agent}\n${sessionId}`).digest("hex").slice(0, 32);
}

/** How long a read keeps a session from the retention sweep before it is written down again. */
const USED_EVERY_MS = 3_600_000;

export class CheckpointStates {
  /** `root`: the folder holding one folder per session (its shadow repository and its state file). */
  constructor(readonly root: string) {}

  dirOf(key: SessionKey): string {
    return join(this.root, checkpointKey(key));
  }

  read(key: SessionKey): CheckpointState | null {
    const file = join(this.dirOf(key), "state.json");
    if (!existsSync(file)) return null;
    try {
      return CheckpointState.parse(JSON.parse(readFileSync(file, "utf8")));
    } catch (err) {
      log.warn(`${key.sessionId}: unreadable checkpoint state, starting again: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  async write(key: SessionKey, state: CheckpointState): Promise<void> {
    // Snapshots hold the folder's files: their folders are the machine's user's alone.
    await mkdir(this.dirOf(key), { recursive: true, mode: 0o700 });
    await writeFileAtomic(join(this.dirOf(key), "state.json"), JSON.stringify(state));
  }

  /** A read keeps the session's checkpoints from the retention sweep (the file's time); written at most once an hour. */
  async used(key: SessionKey, state: CheckpointState): Promise<void> {
    if (Date.now() - state.usedAtMs < USED_EVERY_MS) return;
    await this.write(key, { ...state, usedAtMs: Date.now() });
  }
}
