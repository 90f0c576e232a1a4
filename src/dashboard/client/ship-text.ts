/**
 * Words for shipping a session's work (views/ship.tsx): which uncommitted files it made, a commit message
 * suggested from what changed, and what to do about a refusal of git's.
 */
import type { FileChange } from "@agent-runtime/protocol/review";

/** A path of the session's (relative to its folder) as git's status names it (relative to the repository's top). */
export function inRepository(path: string, cwd: string, root: string): string {
  const folder = cwd.replace(/\/+$/, "");
  const prefix = folder.startsWith(`${root}/`) ? folder.slice(root.length + 1) : "";
  return prefix ? `${prefix}/${path}` : path;
}

const VERB: Record<FileChange["status"], string> = {
  added: "Add",
  modified: "Change",
  deleted: "Remove",
  renamed: "Rename",
  binary: "Change",
  excluded: "Change",
};

/** A one-line message from the changes being committed: "Add notes.md, change app.js" (or a count when long). */
export function suggestedMessage(changes: readonly Pick<FileChange, "path" | "status">[]): string {
  if (changes.length === 0) return "";
  const byVerb = new Map<string, string[]>();
  for (const c of changes) byVerb.set(VERB[c.status], [...(byVerb.get(VERB[c.status]) ?? []), c.path.split("/").pop() ?? c.path]);
  const parts = [...byVerb].map(([verb, names], i) => `${i === 0 ? verb : verb.toLowerCase()} ${names.join(", ")}`);
  const line = parts.join(", ");
  if (line.length <= 72) return line;
  return `${[...byVerb].map(([verb, names], i) => `${i === 0 ? verb : verb.toLowerCase()} ${names.length} ${names.length === 1 ? "file" : "files"}`).join(", ")}`;
}

/** What to do about a refusal, from git's own words (shown beside them); null when there is nothing to add. */
export function gitAdvice(said: string): string | null {
  const s = said.toLowerCase();
  if (s.includes("please tell me who you are") || s.includes("unable to auto-detect email"))
    return 'Set who commits on the machine: git config --global user.name "…" and user.email "…".';
  if (s.includes("nothing to commit")) return "There is nothing to commit in the files chosen: choose others, or nothing is left to ship.";
  if (s.includes("fetch first") || s.includes("non-fast-forward") || s.includes("[rejected]"))
    return "The remote has commits this branch lacks: pull (or rebase) on the machine, then push again.";
  if (s.includes("does not appear to be a git repository") || s.includes("no configured push destination") || s.includes("no such remote"))
    return "This repository has no such remote: add one on the machine (git remote add origin <url>).";
  if (s.includes("permission denied") || s.includes("authentication failed") || s.includes("could not read username"))
    return "The machine could not sign in to the remote: set up its SSH key or credentials there, then try again.";
  if (s.includes("hook")) return "A git hook on the machine refused it: read its words above, fix what it names, and try again.";
  return null;
}
