/**
 * The mock's edits on the disk (main.ts lists its commands): `/write`, `/delete` and `/scatter` act on the
 * session's folder directly, as agents that edit files do, and report what they did.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { type AgentContext, methods } from "@agentclientprotocol/sdk";
import type { Session } from "./session-store";

/** What a file held before a turn touched it, or null when there was none. */
function contentOf(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** `/write` and `/delete`: change one file on the disk, reported as an edit tool call carrying its diff; answers what to say. */
export async function editTurn(client: AgentContext, session: Session, text: string): Promise<string> {
  const firstLine = text.split("\n")[0] ?? "";
  const match = /^\/(write|delete)\s+(\S+)\s?(.*)$/.exec(firstLine);
  if (!match) return "usage: /write <path> <text> or /delete <path>";
  const [, verb, relative = "", written = ""] = match;
  // `{{folder}}`: the name of the folder the session runs in, so that attempts of one prompt (each in its worktree) write apart.
  const content = written.replaceAll("{{folder}}", basename(session.cwd));
  const path = resolve(session.cwd, relative);
  const before = contentOf(path);
  if (verb === "write") {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${content}\n`);
  } else rmSync(path, { force: true });
  const toolCallId = `mock-edit-${randomUUID().slice(0, 8)}`;
  const diff = { type: "diff" as const, path, oldText: before, newText: verb === "write" ? `${content}\n` : "" };
  await client.notify(methods.client.session.update, {
    sessionId: session.id,
    update: {
      sessionUpdate: "tool_call",
      toolCallId,
      title: `${verb === "write" ? "Write" : "Delete"} ${relative}`,
      kind: verb === "write" ? "edit" : "delete",
      status: "completed",
      locations: [{ path }],
      content: [diff],
    },
  });
  return `${verb === "write" ? "Wrote" : "Deleted"} ${relative}`;
}

/** `/scatter <n> <text>`: n files, one in each of n folders (src/module<i>/scattered.txt), each the rest of the line ({{folder}}: the session folder's name). */
export function scatter(session: Session, args: string[]): string {
  const count = Math.max(1, Math.min(1000, Number(args[0] ?? 10) || 10));
  const content = args.slice(1).join(" ").replaceAll("{{folder}}", basename(session.cwd));
  for (let i = 0; i < count; i++) {
    mkdirSync(join(session.cwd, "src", `module${i}`), { recursive: true });
    writeFileSync(join(session.cwd, "src", `module${i}`, "scattered.txt"), `${content}\n`);
  }
  return `Wrote ${count} files`;
}
