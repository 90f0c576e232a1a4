/**
 * A list across machines (sessions, tasks), newest first, a page at a time: each machine answers its
 * page strictly before the cursor; the pages are merged, cut to the limit, and the next cursor
 * (`<ms>.<id>`) names the last record kept, so the page after starts where this one stopped.
 */
import { z } from "zod";
import { Identifier } from "@agent-runtime/protocol/values";
import { bounded } from "./bounded";

/** A page's size when the query does not say. */
export const PAGE_LIMIT = 50;

/** How many machines a list asks at once. */
const LIST_CONCURRENCY = 16;

/**
 * The query of a list across machines: one machine's records only, the page's size, and the `nextCursor`
 * of the page before (its id part in the records' own form, `<idPrefix>-<16 hex>-<machine>`).
 */
export function pageQuery(noun: string, idPrefix: string) {
  return z.object({
    machine: Identifier.optional().describe(`only this machine's ${noun}`),
    limit: z.coerce.number().int().min(1).max(200).optional().describe(`${noun} per page (default ${PAGE_LIMIT})`),
    cursor: z
      .string()
      .regex(new RegExp(`^\\d{1,15}\\.${idPrefix}-[0-9a-f]{16}-.+$`), "the nextCursor of the previous page")
      .optional(),
  });
}

export interface Cursor {
  atMs: number;
  id: string;
}

/** A cursor as a previous page's `nextCursor` wrote it (its form checked by the route's query), or null for the first page. */
export function readCursor(cursor: string | undefined): Cursor | null {
  if (!cursor) return null;
  const cut = cursor.indexOf(".");
  return { atMs: Number(cursor.slice(0, cut)), id: cursor.slice(cut + 1) };
}

/** The machines' pages merged newest first (by `at`, then id), cut to `limit`, and the cursor of the page after (null: none). */
export function mergePages<T extends { id: string }>(
  pages: T[][],
  anyMore: boolean,
  at: (item: T) => number,
  limit: number,
): { items: T[]; nextCursor: string | null } {
  const merged = pages.flat().sort((a, b) => at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const items = merged.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: (merged.length > limit || anyMore) && last ? `${at(last)}.${last.id}` : null };
}

/**
 * One page across `machines`: each asked for its page before the cursor (a bounded number at a time), its
 * records read by `itemsOf` and ordered by `at` (mergePages).
 */
export async function pageAcross<P extends { more: boolean }, T extends { id: string }>(
  machines: string[],
  limit: number,
  page: { ask: (machine: string) => Promise<P>; itemsOf: (page: P) => T[]; at: (item: T) => number },
): Promise<{ items: T[]; nextCursor: string | null }> {
  const pages = await bounded(machines, LIST_CONCURRENCY, page.ask);
  return mergePages(
    pages.map(page.itemsOf),
    pages.some((p) => p.more),
    page.at,
    limit,
  );
}
