/**
 * The mock's sessions on disk, as real agents keep theirs: one JSON file each under MOCK_AGENT_STATE_DIR
 * (default ~/.mock-agent/sessions), so that a new process can load, resume or list them.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { readJsonFileSync } from "../json-file";

/** A session as it is kept on disk after every turn. */
const StoredSession = z.object({
  id: z.string(),
  cwd: z.string(),
  /** What was said, in order. */
  history: z.array(z.object({ role: z.enum(["user", "agent"]), text: z.string() })),
  title: z.string().nullable(),
  updatedAt: z.string(),
  /** Tokens used so far (what its usage_update reports). */
  tokens: z.number().optional(),
});

export type Session = z.output<typeof StoredSession> & { turn: AbortController | null };

const STATE_DIR = process.env.MOCK_AGENT_STATE_DIR ?? join(homedir(), ".mock-agent", "sessions");

/** A session's file: written whole and renamed into place, so a killed mock never leaves half a file. */
export function save(session: Session): void {
  mkdirSync(STATE_DIR, { recursive: true });
  const file = join(STATE_DIR, `${session.id}.json`);
  const { id, cwd, history, title, updatedAt, tokens } = session;
  writeFileSync(`${file}.tmp`, JSON.stringify({ id, cwd, history, title, updatedAt, tokens }));
  renameSync(`${file}.tmp`, file);
}

export function loadFromDisk(id: string): Session | null {
  if (!/^mock-[0-9a-f-]{36}$/.test(id)) return null;
  try {
    const stored = readJsonFileSync(join(STATE_DIR, `${id}.json`), StoredSession);
    return { ...stored, turn: null };
  } catch {
    return null;
  }
}

export function storedSessions(): Omit<Session, "turn">[] {
  let names: string[] = [];
  try {
    names = readdirSync(STATE_DIR).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const session = loadFromDisk(name.slice(0, -".json".length));
    return session ? [session] : [];
  });
}

/** `session/delete`: its file goes too. */
export function removeFromDisk(id: string): void {
  if (/^mock-[0-9a-f-]{36}$/.test(id)) rmSync(join(STATE_DIR, `${id}.json`), { force: true });
}
