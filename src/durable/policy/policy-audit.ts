/**
 * The permission policy's answers in the team's audit log (docs/architecture.md, "The permission policy"),
 * batched: an agent working alone may meet a rule every few seconds, and the team's object must not hear
 * of each on its own. Lines wait here at most FLUSH_AFTER_MS, then go in one call.
 */
import type { AuditEntry } from "@agent-runtime/protocol/trust";

export const FLUSH_AFTER_MS = 1000;
const MAX_BATCH = 100;

export class PolicyAudit {
  private batch: Omit<AuditEntry, "seq">[] = [];

  constructor(
    private readonly host: {
      append(entries: Omit<AuditEntry, "seq">[]): Promise<void>;
      /** Keep the object alive for this work (a Durable Object's waitUntil). */
      waitUntil(work: Promise<unknown>): void;
    },
  ) {}

  /** One line; `by` names who acted when it is not the permission policy (the sandbox: token "sandbox", method SANDBOX). */
  add(
    entry: { route: string; status: number; machine: string },
    by: { token: string; method: string } = { token: "permission policy", method: "POLICY" },
  ): void {
    this.batch.push({ atMs: Date.now(), role: null, ...by, ...entry });
    if (this.batch.length >= MAX_BATCH) this.host.waitUntil(this.flush());
    else if (this.batch.length === 1) this.host.waitUntil(new Promise((resolve) => setTimeout(resolve, FLUSH_AFTER_MS)).then(() => this.flush()));
  }

  async flush(): Promise<void> {
    const entries = this.batch;
    this.batch = [];
    if (entries.length === 0) return;
    await this.host.append(entries).catch((err: unknown) => console.error(`${entries.length} audit lines of the permission policy were not written:`, err));
  }
}
