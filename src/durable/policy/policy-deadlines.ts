/**
 * Asks with a deadline (docs/architecture.md, "The permission policy"): a rule may say "ask, and answer
 * for the person after N seconds", and the policy's `questions` cancels an agent's question after N. Each deadline is kept in the object's storage, so it holds across
 * hibernation, and rings through the object's one alarm; a request answered before it is let be.
 */
import { JsonRpcId } from "@agent-runtime/protocol/acp";
import { z } from "zod";
import { listStoredSync } from "../storage/stored";

export const Deadline = z.object({
  session: z.string(),
  requestId: JsonRpcId,
  atMs: z.number(),
  /** cancel: a question (elicitation) nobody answered. */
  onTimeout: z.enum(["allow", "deny", "cancel"]),
  /** Who set it, as the transcript says it: "the team's policy, rule 2". */
  rule: z.string(),
});
export type Deadline = z.output<typeof Deadline>;

const PREFIX = "policy-deadline:";

export class PolicyDeadlines {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly host: { wake(atMs: number): Promise<void>; answer(deadline: Deadline): Promise<void> },
  ) {}

  add(deadline: Deadline): void {
    this.storage.kv.put(`${PREFIX}${deadline.session}\n${JSON.stringify(deadline.requestId)}`, deadline);
    void this.host.wake(deadline.atMs);
  }

  /** The alarm rang: every deadline past is answered (if its request still waits) and dropped. */
  async runDue(now: number): Promise<void> {
    const due: [string, Deadline][] = [];
    for (const [key, deadline] of listStoredSync(this.storage.kv, PREFIX, Deadline)) if (deadline.atMs <= now) due.push([key, deadline]);
    for (const [key, deadline] of due) {
      this.storage.kv.delete(key);
      await this.host
        .answer(deadline)
        .catch((err: unknown) => console.error(`the policy's answer after a deadline failed (session ${deadline.session}):`, err));
    }
  }

  /** The earliest deadline kept (null: none). */
  nextDueMs(): number | null {
    let next: number | null = null;
    for (const [, deadline] of listStoredSync(this.storage.kv, PREFIX, Deadline)) next = next === null ? deadline.atMs : Math.min(next, deadline.atMs);
    return next;
  }
}
