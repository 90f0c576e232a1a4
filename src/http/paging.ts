/**
 * A list across machines (sessions, tasks), newest first, a page at a time: each machine answers its
 * page strictly before the cursor; the pages are merged, cut to the limit, and the next cursor
 * (`<ms>.<id>`) names the last record kept, so the page after starts where this one stopped.
 */
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
