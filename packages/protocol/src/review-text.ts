/**
 * Review's words and names without its schemas (review.ts re-exports them): what the dashboard's first
 * script needs carries no schema library.
 */

/** How a client asks for a session in its own worktree: `_meta["agent-runtime/worktree"]` on `session/new`. */
export const WORKTREE_META = "agent-runtime/worktree";
/** Where a turn's answer carries its summary: `result._meta["agent-runtime/changes"]`. */
export const CHANGES_META = "agent-runtime/changes";

/** "3 files, +40 −2": a turn's (or a session's) change as a person reads it. */
export function summaryText(summary: { files: number; additions: number; deletions: number }): string {
  if (summary.files === 0) return "no files changed";
  return `${summary.files} ${summary.files === 1 ? "file" : "files"}, +${summary.additions} −${summary.deletions}`;
}
