/**
 * Where the sidecar keeps its machine token: a file only its user can read (0600, in a 0700 folder),
 * never an argument or an environment variable, which every process of the user can read
 * (docs/architecture.md, "Trust"; SECURITY.md says what that does and does not protect against).
 */
import { chmod, mkdir, readFile, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { z } from "zod";
import { writeFileAtomic } from "./atomic-file";
import { errnoCode } from "./log";

export const Credentials = z.object({ url: z.string().url(), machine: z.string().min(1), token: z.string().min(1) });
export type Credentials = z.infer<typeof Credentials>;

export function defaultConfigDir(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "agent-runtime");
}

/** Read a secret file, refusing one that other users could read too. */
export async function readPrivateFile(path: string): Promise<string> {
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) throw new Error(`${path} is not a file`);
  if (process.platform !== "win32" && (info.mode & 0o077) !== 0) {
    throw new Error(`${path} can be read by other users (mode ${(info.mode & 0o777).toString(8)}): chmod 600 ${path}`);
  }
  const text = (await readFile(path, "utf8")).trim();
  if (!text) throw new Error(`${path} is empty`);
  return text;
}

export async function saveCredentials(dir: string, credentials: Credentials): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const path = join(dir, "credentials.json");
  await writeFileAtomic(path, `${JSON.stringify(Credentials.parse(credentials), null, 2)}\n`, 0o600);
  return path;
}

export async function loadCredentials(dir: string): Promise<Credentials | null> {
  const path = join(dir, "credentials.json");
  let text: string;
  try {
    text = await readPrivateFile(path);
  } catch (err) {
    if (errnoCode(err) === "ENOENT" || /is not a file/.test(String(err))) return null;
    throw err;
  }
  const parsed = Credentials.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${path} is not a credentials file of agent-runtime-sidecar; run 'login' again`);
  return parsed.data;
}

/** The first line of a stream (a token piped in), without keeping the stream open for more. */
export async function firstLine(stream: Readable): Promise<string> {
  let text = "";
  for await (const chunk of stream) {
    text += chunk.toString();
    if (text.includes("\n")) break;
  }
  return (text.split("\n")[0] ?? "").trim();
}
