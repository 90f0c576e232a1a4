/**
 * The owner's `--deny` and `--roots` applied to the tunnel's operations (docs/architecture.md,
 * "Sandboxes"): before any handler runs, an operation of a switched-off capability, or one naming a
 * folder outside the roots, is refused with a 403 problem that names the flag. The worker cannot get
 * around it: it only ever reaches the machine through these handlers.
 */
import { realpath } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { OpArgs, OpName } from "@agent-runtime/protocol/ops";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { OpHandlers } from "../tunnel";
import { type Deniable, type OwnerLimits, underRoots } from "./owner-limits";

const SESSION_METHODS = new Set(["session/new", "session/load", "session/resume"]);

/**
 * The folder a client message starts or reattaches a session in, read from the message itself (what the
 * agent will be told), never from what the worker says of it: a worker cannot name one folder to the
 * guard and another to the agent.
 */
export function sessionFolderOf(message: string): string | undefined {
  if (!message.includes('"cwd"')) return undefined;
  try {
    const parsed = JSON.parse(message) as { method?: unknown; params?: { cwd?: unknown } };
    return typeof parsed.method === "string" && SESSION_METHODS.has(parsed.method) && typeof parsed.params?.cwd === "string" ? parsed.params.cwd : undefined;
  } catch {
    return undefined;
  }
}

/** Which capability an operation belongs to, for `--deny` (null: none that can be denied). */
export function capabilityOf<N extends OpName>(op: N, args: OpArgs<N>): Deniable[] {
  if (op.startsWith("processes.")) {
    const tty = op === "processes.spawn" && (args as OpArgs<"processes.spawn">).tty === true;
    return tty || op === "processes.resize" ? ["processes", "terminal"] : ["processes"];
  }
  if (op.startsWith("fs.")) return ["files"];
  if (op === "agents.install") return ["agents-install"];
  return [];
}

/** The folders an operation names (those `--roots` confines), as the caller wrote them. */
export function foldersOf<N extends OpName>(op: N, args: OpArgs<N>): string[] {
  const a = args as Record<string, unknown>;
  const str = (v: unknown): string[] => (typeof v === "string" ? [v] : []);
  switch (op) {
    case "acp.post": {
      const inMessage = sessionFolderOf((args as OpArgs<"acp.post">).message);
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
      return (args as OpArgs<"acp.restore">).sessions.map((s) => s.cwd);
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
export async function refusal<N extends OpName>(
  limits: OwnerLimits,
  op: N,
  args: OpArgs<N>,
  resolvePath: (path: string) => string,
): Promise<ProblemError | null> {
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
  for (const op of Object.keys(handlers) as OpName[]) {
    const handler = handlers[op] as (args: unknown, ctx: unknown) => Promise<unknown>;
    guarded[op] = async (args: unknown, ctx: unknown) => {
      const refused = await refusal(limits, op, args as OpArgs<typeof op>, resolvePath);
      if (refused) throw refused;
      return handler(args, ctx);
    };
  }
  return guarded as OpHandlers;
}
