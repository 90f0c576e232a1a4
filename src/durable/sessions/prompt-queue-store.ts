/**
 * Where prompts wait for their machine (docs/architecture.md, "Sessions"): the SQL of the machine's
 * prompt queue, in order per session. What the records show of it (the first words, by whom, since when)
 * is kept in memory once read, so listing sessions asks no more of storage.
 */
import type { QueuedPrompt } from "@agent-runtime/protocol/sessions";
import { z } from "zod";
import { LazySchema, type Migration } from "../storage/migrations";
import { firstRow, rows, writeRow } from "../storage/stored";

export const PROMPT_QUEUE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "prompts waiting for their machine, in order per session",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS prompt_queue (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL, at_ms INTEGER NOT NULL, who TEXT NOT NULL, text TEXT NOT NULL, prompt TEXT NOT NULL
      )`);
      sql.exec(`CREATE INDEX IF NOT EXISTS prompt_queue_in_order ON prompt_queue (session_id, at_ms, id)`);
    },
  },
];

export const QueuedRow = z.object({
  id: z.string(),
  session_id: z.string(),
  at_ms: z.number(),
  who: z.string(),
  text: z.string(),
  /** JSON: the ACP ContentBlocks to send. */
  prompt: z.string(),
});
export type QueuedRow = z.output<typeof QueuedRow>;

export class PromptQueueStore {
  private readonly db: LazySchema;
  /** Every session's queue as the records show it (null until first read). */
  private summaries: Map<string, QueuedPrompt[]> | null = null;

  /** The table is made when first used: an object whose sessions never queue a prompt pays nothing here. */
  constructor(storage: DurableObjectStorage) {
    this.db = new LazySchema(storage, "prompt_queue", PROMPT_QUEUE_MIGRATIONS);
  }

  private all(): Map<string, QueuedPrompt[]> {
    if (this.summaries) return this.summaries;
    const map = new Map<string, QueuedPrompt[]>();
    for (const r of rows(this.db.sql, QueuedRow.omit({ prompt: true }), `SELECT id, session_id, at_ms, who, text FROM prompt_queue ORDER BY at_ms, id`)) {
      const list = map.get(r.session_id) ?? [];
      list.push({ id: r.id, text: r.text, by: r.who, atMs: r.at_ms });
      map.set(r.session_id, list);
    }
    this.summaries = map;
    return map;
  }

  /** A session's queue, in order. */
  queuedOf(sessionId: string): QueuedPrompt[] {
    return this.all().get(sessionId) ?? [];
  }

  /** The sessions with a prompt waiting. */
  sessions(): string[] {
    return [...this.all().keys()];
  }

  add(row: QueuedRow): void {
    writeRow(this.db.sql, "prompt_queue", row, "insert");
    const list = this.all().get(row.session_id) ?? [];
    list.push({ id: row.id, text: row.text, by: row.who, atMs: row.at_ms });
    this.all().set(row.session_id, list);
  }

  /** The first prompt a session has waiting, whole. */
  next(sessionId: string): QueuedRow | null {
    return firstRow(this.db.sql, QueuedRow, `SELECT * FROM prompt_queue WHERE session_id = ? ORDER BY at_ms, id LIMIT 1`, sessionId);
  }

  /** Take a prompt out of the queue (sent or cancelled): whether it was there. */
  remove(sessionId: string, id: string): boolean {
    const removed = this.db.sql.exec(`DELETE FROM prompt_queue WHERE id = ? AND session_id = ?`, id, sessionId).rowsWritten > 0;
    const list = this.all()
      .get(sessionId)
      ?.filter((q) => q.id !== id);
    if (list && list.length > 0) this.all().set(sessionId, list);
    else this.all().delete(sessionId);
    return removed;
  }
}
