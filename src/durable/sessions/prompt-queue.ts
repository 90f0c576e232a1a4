/**
 * Prompts wait for their machine (docs/architecture.md, "Sessions"): `POST /v1/sessions/{id}/prompt` puts
 * the prompt in the session's queue; it is sent at once when the machine is there and no turn runs, else
 * when the machine comes back or the turn before it ends, in order, one turn at a time. A prompt is taken
 * out of the queue before it is sent, so it is never sent twice; one that could not reach the machine goes
 * back to the head of the queue.
 */
import type { JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { promptText } from "@agent-runtime/protocol/acp-meaning";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { type PromptEntry, QUEUE_LIMITS, type Session } from "@agent-runtime/protocol/sessions";
import type { PromptQueueStore } from "./prompt-queue-store";

/** What the queue needs of the machine's object. */
export interface QueueHost {
  online(): boolean;
  machine(): string;
  record(id: string): Session | null;
  /** A `session/prompt` through the relay (the agent brought back if it is gone): resolves when the turn ends. */
  send(record: Session, message: JsonRpcMessage, who: string): Promise<Outcome<AcpPostResult>>;
  /** The session's queue changed: its followers get the record again. */
  changed(id: string): void;
  /** A line in the session's transcript. */
  note(id: string, text: string): void;
}

const turning = (record: Session) => record.state === "running" || record.state === "waiting";

export class PromptQueue {
  /** Sessions whose queue is being sent now (one turn at a time each). */
  private readonly draining = new Set<string>();

  constructor(
    private readonly store: PromptQueueStore,
    private readonly host: QueueHost,
  ) {}

  submit(id: string, prompt: unknown[], who: string, now = Date.now()): Outcome<PromptEntry> {
    const record = this.host.record(id);
    if (!record) return { ok: false, problem: { code: "not_found", detail: `no session '${id}' on this machine` } };
    if (record.state === "closed") return { ok: false, problem: { code: "conflict", detail: `session '${id}' is closed: continue it in a new session` } };
    const body = JSON.stringify(prompt);
    if (new TextEncoder().encode(body).length > QUEUE_LIMITS.maxPromptBytes)
      return { ok: false, problem: { code: "payload_too_large", detail: `a prompt is at most ${QUEUE_LIMITS.maxPromptBytes} bytes` } };
    if (this.store.queuedOf(id).length >= QUEUE_LIMITS.maxQueued)
      return { ok: false, problem: { code: "conflict", detail: `${QUEUE_LIMITS.maxQueued} prompts already wait for this session: cancel one first` } };
    const entry = `prm-${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const text = promptText(prompt).slice(0, 200);
    const sendsNow = this.host.online() && !this.draining.has(id) && !turning(record) && this.store.queuedOf(id).length === 0;
    this.store.add({ id: entry, session_id: id, at_ms: now, who, text, prompt: body });
    if (!sendsNow) this.host.note(id, `Queued ${this.host.online() ? "behind the turn in progress" : `until ${this.host.machine()} is back`}: ${text}`);
    this.host.changed(id);
    if (this.host.online()) void this.drain(id);
    return { ok: true, value: { id: entry, state: sendsNow ? "sent" : "queued" } };
  }

  cancel(id: string, entry: string): Outcome<PromptEntry> {
    if (!this.store.remove(id, entry)) {
      return {
        ok: false,
        problem: { code: "conflict", detail: `prompt '${entry}' is not waiting in session '${id}' (sent already, cancelled, or never queued)` },
      };
    }
    this.host.note(id, "A queued prompt was cancelled.");
    this.host.changed(id);
    return { ok: true, value: { id: entry, state: "cancelled" } };
  }

  /** Send what a session has waiting, in order, one turn at a time, while its machine is there. */
  async drain(id: string): Promise<void> {
    if (this.draining.has(id)) return;
    this.draining.add(id);
    try {
      for (;;) {
        const record = this.host.record(id);
        const next = record && this.host.online() && !turning(record) && record.state !== "closed" ? this.store.next(id) : null;
        if (!record || !next) return;
        this.store.remove(id, next.id);
        this.host.changed(id);
        const message = {
          jsonrpc: "2.0" as const,
          id: `agent-runtime-queue-${next.id}`,
          method: "session/prompt",
          params: { sessionId: record.sessionId, prompt: JSON.parse(next.prompt) },
        };
        const outcome = await this.host.send(record, message, next.who);
        if (!outcome.ok && outcome.problem.code === "machine_offline") {
          // It never reached the machine: it waits again, first in line.
          this.store.add(next);
          this.host.changed(id);
          return;
        }
      }
    } finally {
      this.draining.delete(id);
    }
  }

  /** The machine is back: every session's queue goes out. */
  async drainAll(): Promise<void> {
    await Promise.all(this.store.sessions().map((id) => this.drain(id)));
  }
}
