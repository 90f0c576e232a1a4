/**
 * The values people typed to log agents in (an `env_var` method's variables), kept on this machine only
 * (docs/architecture.md, "Logins"; SECURITY.md, "Agent logins"): one file per agent, 0600 in a 0700
 * folder of the sidecar's data folder, given to that agent's processes only, as environment variables.
 * The worker never holds them: they cross the tunnel once, in the call that stores them.
 */
import { chmod, mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { EnvVarName } from "@agent-runtime/protocol/logins";
import type { AgentId } from "@agent-runtime/protocol/values";
import { writeFileAtomic } from "../atomic-file";

const Stored = z.object({ values: z.record(EnvVarName, z.string()) });

export class AgentValues {
  private readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, "credentials", "agents");
  }

  private file(agent: AgentId): string {
    return join(this.dir, `${agent}.json`);
  }

  /** An agent's values (none when nothing is kept, or the file cannot be read as this sidecar wrote it). */
  async get(agent: AgentId): Promise<Record<string, string>> {
    const text = await readFile(this.file(agent), "utf8").catch(() => null);
    if (text === null) return {};
    try {
      const parsed = Stored.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data.values : {};
    } catch {
      return {};
    }
  }

  /** The names kept for an agent, never the values. */
  async names(agent: AgentId): Promise<string[]> {
    return Object.keys(await this.get(agent)).sort();
  }

  /** Keep these values for an agent (beside those kept already; a name given again is replaced). */
  async set(agent: AgentId, values: Record<string, string>): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    const next = { values: { ...(await this.get(agent)), ...values } };
    await writeFileAtomic(this.file(agent), JSON.stringify(Stored.parse(next)), 0o600);
  }

  /** Forget an agent's values; the names that were kept. */
  async remove(agent: AgentId): Promise<string[]> {
    const names = await this.names(agent);
    await rm(this.file(agent), { force: true });
    return names;
  }
}
