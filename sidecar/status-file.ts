/**
 * What a running sidecar says about itself, for `agent-runtime-sidecar status`: one small JSON file in
 * its data folder, rewritten (whole, then renamed) only when the tunnel's state changes.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "./atomic-file";
import { errnoCode } from "./log";

export const TunnelState = z.enum(["connecting", "connected", "reconnecting", "refused", "replaced", "stopped"]);
export type TunnelState = z.infer<typeof TunnelState>;

export const SidecarStatus = z.object({
  pid: z.number().int(),
  url: z.string(),
  machine: z.string(),
  sidecarVersion: z.string(),
  state: TunnelState,
  sinceMs: z.number().int(),
  /** The last thing that went wrong (a refused token, a dropped tunnel), with when. */
  lastError: z.object({ message: z.string(), atMs: z.number().int() }).nullable(),
  /** What the worker said about this sidecar's version, when it is outdated. */
  upgrade: z.string().nullable(),
});
export type SidecarStatus = z.infer<typeof SidecarStatus>;

export function statusPath(dataDir: string): string {
  return join(dataDir, "status.json");
}

export function writeStatus(dataDir: string, status: SidecarStatus): Promise<void> {
  return writeFileAtomic(statusPath(dataDir), `${JSON.stringify(status, null, 2)}\n`);
}

export async function readStatus(dataDir: string): Promise<SidecarStatus | null> {
  try {
    const parsed = SidecarStatus.safeParse(JSON.parse(await readFile(statusPath(dataDir), "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Is a process with this pid alive (and ours to signal)? */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === "EPERM";
  }
}
