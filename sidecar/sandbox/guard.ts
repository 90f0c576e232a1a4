/**
 * The owner's `--deny` and `--roots` applied to the tunnel's operations (docs/architecture.md,
 * "Sandboxes"): before any handler runs, an operation of a switched-off capability, or one naming a
 * folder outside the roots, is refused with a 403 problem that names the flag. The worker cannot get
 * around it: it only ever reaches the machine through these handlers.
 */
import { realpath } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { OpHandlers } from "../tunnel";
import { type Deniable, type OwnerLimits, underRoots } from "./owner-limits";

const SESSION_METHODS = new Set(["session/new", "session/load", "session/resume"]);
/** What the guard reads of a client message: a session's method and folder. */
const SessionStart = z.object({ method: z.string(), params: z.object({ cwd: z.string() }) });
/** What it reads of a restore: each session's folder. */
const RestoredFolders = z.array(z.object({ cwd: z.string() }));

/** An operation's arguments as fields to read one by one (each checked where it is read). */
function fieldsOf(args: unknown): Record<string, unknown> {
  return typeof args === "object" && args !== null ? Object.fromEntries(Object.entries(args)) : {};
}

/**
 * The folder a client message starts or reattaches a session in, read from the message itself (what the
 * agent will be told), never from what the worker says of it: a worker cannot name one folder to the
 * guard and another to the agent.
 */
export function sessionFolderOf(message: string): string | undefined {
  if (!message.includes('"cwd"')) return undefined;
  try {
    const parsed = SessionStart.safeParse(JSON.parse(message));
    return parsed.success && SESSION_METHODS.has(parsed.data.method) ? parsed.data.params.cwd : undefined;
  } catch {
    return undefined;
  }
}

/** Which capability an operation belongs to, for `--deny` (null: none that can be denied). */
export function capabilityOf(op: string, args: unknown): Deniable[] {
  if (op.startsWith("processes.")) {
    const tty = op === "processes.spawn" && fieldsOf(args).tty === true;
    return tty || op === "processes.resize" ? ["processes", "terminal"] : ["processes"];
  }
  if (op.startsWith("fs.")) return ["files"];
  if (op === "agents.install") return ["agents-install"];
  return [];
}

/** The folders an operation names (those `--roots` confines), as the caller wrote them. */
export function foldersOf(op: string, args: unknown): string[] {
  const a = fieldsOf(args);
  const str = (v: unknown): string[] => (typeof v === "string" ? [v] : []);
  switch (op) {
    case "acp.post": {
      const inMessage = typeof a.message === "string" ? sessionFolderOf(a.message) : undefined;
      return [...str(a.cwd), ...(inMessage === undefined ? [] : [inMessage])];
    }
    case "acp.discover":
    case "git.status":
    case "git.commit":
    case "git.push":
    case "git.pullRequest":
    case "gh.comment":
    case "worktrees.list":
    case "processes.spawn":
    case "processes.run":
      return str(a.cwd);
    case "acp.restore":
      return RestoredFolders.safeParse(a.sessions).data?.map((s) => s.cwd) ?? [];
    case "fs.entries":
      return [typeof a.path === "string" ? a.path : "~"];
    case "worktrees.remove":
    case "fs.stat":
    case "fs.mkdir":
    case "fs.delete":
    case "fs.read":
    case "fs.commit":
    case "fs.unpack":
      return str(a.path);
    case "fs.move":
      return [...str(a.from), ...str(a.to)];
    case "mcp.entry.get":
    case "mcp.entry.put":
    case "mcp.entry.delete":
    case "skills.entry.get":
    case "skills.entry.put":
    case "skills.entry.delete":
      return str(a.directory);
    default:
      return [];
  }
}

/** The real path of `path`, or of its nearest existing parent with the rest appended (a symlink cannot lead out). */
async function realFolder(path: string): Promise<string> {
  let current = resolve(path);
  let rest = "";
  for (;;) {
    try {
      const real = await realpath(current);
      return rest ? resolve(real, rest) : real;
    } catch {
      const parent = dirname(current);
      if (parent === current) return resolve(path);
      rest = rest ? `${current.slice(parent.length + 1)}/${rest}` : current.slice(parent.length + 1);
      current = parent;
    }
  }
}

/** Refuse what the owner switched off or what names a folder outside the roots; null when allowed. */
export async function refusal(limits: OwnerLimits, op: string, args: unknown, resolvePath: (path: string) => string): Promise<ProblemError | null> {
  for (const capability of capabilityOf(op, args)) {
    if (limits.deny.includes(capability)) {
      return new ProblemError(
        "permission_denied",
        `this machine's owner switched ${capability} off (--deny ${capability}): '${op}' is refused here whatever the worker asks`,
        { deny: capability },
      );
    }
  }
  if (limits.roots.length === 0) return null;
  const folders = foldersOf(op, args);
  if (folders.length === 0) return null;
  // Both sides real: a root that is a symlink still holds its folders; a link inside one cannot lead out.
  const roots = await Promise.all(limits.roots.map(realFolder));
  for (const folder of folders) {
    const real = await realFolder(resolvePath(folder));
    if (!underRoots(roots, real)) {
      return new ProblemError(
        "permission_denied",
        `'${folder}' is outside the folders this machine's owner allows (--roots ${limits.roots.join(",")}): '${op}' is refused`,
        { roots: limits.roots },
      );
    }
  }
  return null;
}

/** Every handler behind the owner's limits. */
export function guardHandlers(handlers: OpHandlers, limits: OwnerLimits, resolvePath: (path: string) => string): OpHandlers {
  if (limits.deny.length === 0 && limits.roots.length === 0) return handlers;
  const guarded: Record<string, unknown> = {};
  for (const [op, handler] of Object.entries(handlers)) {
    // One wrapper for every operation: each handler takes its own operation's arguments, a type a loop over
    // all of them cannot name; the wrapper hands on exactly what it was given.
    const run = handler as (args: unknown, ctx: unknown) => Promise<unknown>;
    guarded[op] = async (args: unknown, ctx: unknown) => {
      const refused = await refusal(limits, op, args, resolvePath);
      if (refused) throw refused;
      return run(args, ctx);
    };
  }
  // The same operations as `handlers`, each wrapped as above (built by name, which the table's type cannot follow).
  return guarded as OpHandlers;
}
