/**
 * A table of records the team keeps by id and lists oldest first (schedules, triggers): every row read
 * through its schema (stored.ts) and shown in its API shape by `show`. Each feature's book extends it and
 * writes only what is its own: how a row is made, changed and acted on.
 */
import type { z } from "zod";
import { firstRow, rows } from "./stored";

export class RecordTable<R extends z.ZodObject, T> {
  constructor(
    protected readonly sql: SqlStorage,
    private readonly table: "schedules" | "triggers",
    private readonly schema: R,
    private readonly show: (row: z.output<R>) => T,
  ) {}

  /** Every record, oldest first (ties by id). */
  list(): T[] {
    return rows(this.sql, this.schema, `SELECT * FROM ${this.table} ORDER BY created_at, id`).map(this.show);
  }

  get(id: string): T | null {
    const row = this.row(id);
    return row ? this.show(row) : null;
  }

  /** The stored row, for the book's own work on its columns. */
  protected row(id: string): z.output<R> | null {
    return firstRow(this.sql, this.schema, `SELECT * FROM ${this.table} WHERE id = ?`, id);
  }

  /** Whether there was one to delete. */
  delete(id: string): boolean {
    return this.sql.exec(`DELETE FROM ${this.table} WHERE id = ? RETURNING id`, id).toArray().length > 0;
  }
}
