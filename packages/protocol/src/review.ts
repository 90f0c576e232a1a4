/**
 * Review and ship (docs/architecture.md, "Review and ship"): what an agent changed, turn by turn, read
 * from checkpoints the machine keeps of a session's folder; and the git actions that ship it. One schema
 * per resource, used by the tunnel's operations, the routes and the OpenAPI document.
 */
import { z } from "zod";
import { resource, strictResource } from "./resource";

export { CHANGES_META, summaryText, WORKTREE_META } from "./review-text";

/** Bounds of checkpoints and of what the changes API answers. */
export const REVIEW_LIMITS = {
  /** A file larger than this is not snapshotted: it is listed as `excluded`. */
  maxFileBytes: 5 * 1024 * 1024,
  /** One file's unified diff is answered up to this many bytes; past it the answer says so. */
  maxDiffBytes: 512 * 1024,
  /** A folder with more files than this (after .gitignore and the heavy folders) is not checkpointed. */
  maxFolderFiles: 100_000,
  /** A first snapshot whose listing takes longer than this is given up, and the session is not checkpointed. */
  firstListingMs: 10_000,
  /** Files listed in one answer (the totals still count them all). */
  maxFiles: 2_000,
  /** Checkpoints of a session nobody used for this long are removed by the machine. */
  retentionDays: 30,
} as const;

/** A path relative to the session's folder (or a repository), as the machine names it: `/`-separated, never `..` or absolute. */
export const RelativePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => !p.startsWith("/") && !p.includes("\0") && !p.split("/").some((s) => s === ".." || s === "." || s === ""), {
    message: "a path relative to the session's folder, without '.', '..' or empty segments",
  });

export const FileChangeStatus = z.enum(["added", "modified", "deleted", "renamed", "binary", "excluded"]);
export type FileChangeStatus = z.infer<typeof FileChangeStatus>;

export const FileChange = resource("FileChange", {
  path: z.string(),
  status: FileChangeStatus.describe("binary: a binary file added, changed or removed; excluded: not snapshotted (a heavy folder or a file over the bound)"),
  previousPath: z.string().optional().describe("renamed: where it was"),
  additions: z.number().int().min(0),
  deletions: z.number().int().min(0),
  reason: z.string().optional().describe("excluded: why"),
});
export type FileChange = z.infer<typeof FileChange>;

/** A turn's (or a session's) change in one line: what a transcript entry and a notification carry. */
export const ChangeSummary = resource("ChangeSummary", {
  files: z.number().int().min(0),
  additions: z.number().int().min(0),
  deletions: z.number().int().min(0),
});
export type ChangeSummary = z.infer<typeof ChangeSummary>;

/** A turn's summary as the machine reports it with the turn's answer (`_meta["agent-runtime/changes"]`). */
export const TurnChanges = ChangeSummary.extend({ turn: z.number().int().min(1) }).meta({ id: "TurnChanges" });
export type TurnChanges = z.infer<typeof TurnChanges>;

export const Changes = resource("Changes", {
  turn: z.number().int().min(1).nullable().describe("the turn these are of; null: the whole session, from its first checkpoint to now"),
  turns: z.number().int().min(0).describe("turns the machine has checkpoints of"),
  cwd: z.string().describe("the folder the paths are relative to"),
  files: z.array(FileChange),
  truncated: z.boolean().describe("more files changed than are listed (the totals count them all)"),
  totals: ChangeSummary,
  unavailable: z.string().nullable().describe("why the machine keeps no checkpoints of this session (e.g. a folder too large), else null"),
});
export type Changes = z.infer<typeof Changes>;

export const FileDiff = resource("FileDiff", {
  path: z.string(),
  status: FileChangeStatus,
  diff: z.string().nullable().describe("git's unified diff of the file; null when binary, excluded or too large"),
  tooLarge: z.boolean().describe("the diff is over the bound: read the file instead (GET /v1/fs/file?path=)"),
  bytes: z.number().int().min(0).describe("the diff's size in bytes, answered or not"),
});
export type FileDiff = z.infer<typeof FileDiff>;

export const RevertRequest = strictResource("RevertRequest", {
  turn: z.number().int().min(1),
  force: z.boolean().optional().describe("restore even files changed since the turn (their later changes are lost)"),
});
export type RevertRequest = z.infer<typeof RevertRequest>;

export const RevertResult = resource("RevertResult", {
  turn: z.number().int().min(1),
  restored: z.array(z.string()).describe("files put back as they were before the turn"),
  removed: z.array(z.string()).describe("files the turn added, removed again"),
});
export type RevertResult = z.infer<typeof RevertResult>;

// ---------------- git ----------------

export const GitCwd = z.string().min(1).max(4096).describe("a folder in the repository (absolute, or relative to the machine's home)");

/** A name git takes on its command line (a remote, a branch, a commit): no white space, and never an option. */
const GitName = (what: string) =>
  z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^-\s][^\s]*$/, what);

export const GitFile = z.object({
  path: z.string(),
  index: z.string().describe("git's status letter for the index ('.' unchanged, '?' untracked)"),
  worktree: z.string().describe("git's status letter for the work tree"),
  previousPath: z.string().optional(),
});

export const GitStatus = resource("GitStatus", {
  root: z.string().describe("the repository's top folder"),
  branch: z.string().nullable().describe("null: a detached HEAD"),
  head: z.string().nullable().describe("the commit HEAD names; null before the first commit"),
  upstream: z.string().nullable(),
  remotes: z.array(z.string()).optional().describe("the repository's remotes by name (none: nothing to push to); absent from an older sidecar"),
  ahead: z.number().int().min(0),
  behind: z.number().int().min(0),
  files: z.array(GitFile),
  truncated: z.boolean(),
});
export type GitStatus = z.infer<typeof GitStatus>;

export const GitCommitRequest = strictResource("GitCommitRequest", {
  cwd: GitCwd,
  message: z
    .string()
    .min(1)
    .max(64 * 1024),
  paths: z.array(RelativePath).max(10_000).optional().describe("commit only these (relative to the repository's top folder); default every change"),
});

export const GitCommitResult = resource("GitCommitResult", {
  commit: z.string(),
  branch: z.string().nullable(),
  summary: z.string().describe("git's one-line summary"),
});

export const GitPushRequest = strictResource("GitPushRequest", {
  cwd: GitCwd,
  remote: GitName("a remote's name").optional(),
  branch: GitName("a branch's name").optional(),
  setUpstream: z.boolean().optional(),
});

export const GitPushResult = resource("GitPushResult", { remote: z.string(), branch: z.string(), output: z.string() });

export const PullRequestRequest = strictResource("PullRequestRequest", {
  cwd: GitCwd,
  title: z.string().min(1).max(256),
  body: z
    .string()
    .max(64 * 1024)
    .optional(),
  base: GitName("a branch's name").optional(),
  draft: z.boolean().optional(),
});

export const PullRequestResult = resource("PullRequestResult", {
  opened: z.boolean().describe("true: the GitHub CLI opened it; false: open it yourself at `url`"),
  url: z.string().nullable().describe("the pull request, or the page that opens one; null when the remote is neither GitHub nor GitLab"),
  reason: z.string().optional().describe("why no pull request was opened"),
});

// ---------------- worktrees ----------------

export const WorktreeRequest = z
  .object({
    base: GitName("a branch or commit").optional().describe("default: the repository's HEAD"),
    name: z.string().max(64).optional().describe("words for the branch's name (agent/<slug>-<short id>)"),
    branch: z
      .string()
      .max(128)
      .regex(/^agent\/[a-z0-9][a-z0-9-]*$/, "agent/<lowercase words>")
      .optional()
      .describe("the new branch's exact name (an attempt's: agent/<group>-<n>-<agent>); refused when it exists"),
  })
  .strict();
export type WorktreeRequest = z.infer<typeof WorktreeRequest>;

export const SessionWorktree = resource("SessionWorktree", {
  repository: z.string().describe("the repository's top folder"),
  path: z.string().describe("the worktree's folder"),
  branch: z.string(),
  base: z.string().describe("what it branched from, as named"),
});
export type SessionWorktree = z.infer<typeof SessionWorktree>;

export const Worktree = resource("Worktree", {
  path: z.string(),
  branch: z.string().nullable(),
  head: z.string().nullable(),
  base: z.string().nullable().describe("for a session's worktree: what it branched from"),
  ahead: z.number().int().min(0).nullable().describe("commits on the branch not on its base"),
  behind: z.number().int().min(0).nullable(),
  main: z.boolean().describe("the repository's own folder"),
  session: z.string().nullable().describe("the agent's sessionId working there, when a session started it"),
});
export type Worktree = z.infer<typeof Worktree>;

export const WorktreeList = resource("WorktreeList", { repository: z.string(), worktrees: z.array(Worktree) });
