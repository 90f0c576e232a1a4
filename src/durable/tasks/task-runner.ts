/**
 * Tasks (docs/architecture.md, "Tasks"): a session the runtime starts and drives itself on this machine,
 * one prompt to its end. A task waits, queued, while the machine is away or runs TASK_LIMITS.runningPerMachine
 * tasks; it starts when the machine comes back or a running task ends, oldest first, once. Running, it is
 * an ACP server of its own (its id is the server id): `initialize`, `session/new` in its folder (a
 * worktree, its own policy), its prompt, then the agent is stopped. Its result is the turn's: stop reason,
 * the agent's last line, the changes summary and the branch. A deadline (the object's alarm) cancels it.
 */
import type { MachineFeature } from "../machine/feature";
import type { JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { answerOf, stopReasonOf } from "@agent-runtime/protocol/acp-meaning";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { summaryText, WORKTREE_META } from "@agent-runtime/protocol/review-text";
import type { Session } from "@agent-runtime/protocol/sessions";
import {
  FINISHED_TASK_STATES,
  TASK_DEADLINE_DEFAULT_SECONDS,
  TASK_LIMITS,
  type Task,
  type TaskCall,
  type TaskOrigin,
  type TaskPage,
  TaskRequest,
  type TaskResult,
  IssueRef,
} from "@agent-runtime/protocol/tasks";
import type { WorkOrigin } from "@agent-runtime/protocol/sandbox";
import { PermissionPolicy } from "@agent-runtime/protocol/policy";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { Cost } from "@agent-runtime/protocol/usage";
import type { RuntimeEvent } from "../notifications/events";
import { POLICY_META, startedSessionId } from "../sessions/session-policy";
import { originOf, resultOf, type TaskRow, TaskStore } from "./task-store";
import { randomHex16 } from "../../lib/ids";
import { z } from "zod";
import { getStoredSync, jsonText, listStoredSync, parseStored } from "../storage/stored";

export interface TaskHost {
  online(): boolean;
  machine(): string;
  /** One message to an ACP server, as the relay sends a client's (recorded). */
  acpPost(
    req: { serverId: string; agent?: AgentId; origin?: WorkOrigin; message: JsonRpcMessage; who: string },
    timeoutMs: number,
  ): Promise<Outcome<AcpPostResult>>;
  call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<Outcome<OpResult<N>>>;
  /** The session a server's ACP session id is recorded as. */
  recordOf(serverId: string, acpSessionId: string): Session | null;
  session(id: string): Session | null;
  /** The team lists this machine's records (announced once). */
  announce(): void;
  wake(atMs: number): Promise<void>;
  waitUntil(work: Promise<unknown>): void;
  /** How long `session/new` may take (an install, a worktree). */
  startTimeoutMs: number;
  /** A task started, went back to the queue or ended. */
  changed?(task: Task): void;
}

const END_KEY = "task-end:";
/** A task's cost bound (its `maxCostUsd`), beside its row: the cost its agent reports is held against it. */
const MAX_COST_KEY = "task-max-cost:";
const MaxCost = z.number().nonnegative();

export class TaskRunner implements MachineFeature {
  private readonly store: TaskStore;
  /** What each running task's turn said last (its turn.finished event), by session. */
  private readonly lastWords = new Map<string, { lastLine: string | null; changes: TaskResult["changes"] }>();

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly host: TaskHost,
  ) {
    this.store = new TaskStore(storage);
  }

  /** One call of the routes (`TaskCall`, parsed by the object). */
  async handle(call: TaskCall): Promise<Outcome<Task | TaskPage>> {
    switch (call.op) {
      case "submit":
        return this.submit(call.request, call.machine, call.who, call.report ?? null, call.origin);
      case "get": {
        const row = this.store.get(call.id);
        return row ? { ok: true, value: this.toTask(row) } : notFound(call.id);
      }
      case "cancel":
        return this.cancel(call.id);
      case "list": {
        const rows = this.store.list(call.filter, call.before, call.limit + 1);
        const tasks = rows.map((r) => this.toTask(r)).filter((t) => call.filter.state === undefined || t.state === call.filter.state);
        return { ok: true, value: { tasks: tasks.slice(0, call.limit), more: rows.length > call.limit } };
      }
    }
  }

  private submit(request: TaskRequest, machine: string, who: string, report: IssueRef | null, origin: TaskOrigin): Outcome<Task> {
    if (this.store.count("queued") >= TASK_LIMITS.queuedPerMachine) {
      return { ok: false, problem: { code: "too_many_tasks", detail: `machine '${machine}' has ${TASK_LIMITS.queuedPerMachine} tasks queued already` } };
    }
    const prompt = typeof request.prompt === "string" ? [{ type: "text", text: request.prompt }] : request.prompt;
    const text = prompt.map((b) => (typeof b.text === "string" ? b.text : "")).join(" ");
    const row: TaskRow = {
      id: `task-${randomHex16()}-${machine}`,
      agent: request.agent,
      cwd: request.cwd,
      title: text.trim().split("\n")[0]!.slice(0, 200) || "(no text)",
      prompt: JSON.stringify(prompt),
      worktree: request.worktree ? JSON.stringify(request.worktree) : null,
      policy: request.policy ? JSON.stringify(request.policy) : null,
      deadline_s: request.deadlineSeconds ?? TASK_DEADLINE_DEFAULT_SECONDS,
      notify: request.notify === false ? 0 : 1,
      state: "queued",
      session_id: null,
      acp_session_id: null,
      created_by: who,
      created_at: Date.now(),
      started_at: null,
      ended_at: null,
      result: null,
      report: report ? JSON.stringify(report) : null,
      origin,
    };
    this.store.put(row);
    if (request.maxCostUsd !== undefined) this.storage.kv.put(`${MAX_COST_KEY}${row.id}`, request.maxCostUsd);
    this.store.trim();
    this.host.announce();
    void this.drain();
    // As it stands now: the drain may have started it.
    return { ok: true, value: this.toTask(this.store.get(row.id) ?? row) };
  }

  /**
   * Start what waits, oldest first, while the machine is there and under its limit. It never waits on
   * anything (each task runs on its own), so two drains cannot interleave.
   */
  drain(): Promise<void> {
    while (this.host.online() && this.store.count("running") < TASK_LIMITS.runningPerMachine) {
      const next = this.store.inState("queued")[0];
      if (!next) break;
      next.state = "running";
      next.started_at = Date.now();
      this.store.put(next);
      this.host.changed?.(this.toTask(next));
      this.endAt(next.id, next.started_at + next.deadline_s * 1000);
      void this.run(next);
    }
    return Promise.resolve();
  }

  private async run(row: TaskRow): Promise<void> {
    const who = row.created_by;
    const serverId = row.id;
    // The call that starts its agent says what started the task: the team's sandbox rules match on it.
    const post = (message: Record<string, unknown>, timeoutMs: number, agent?: AgentId) =>
      this.host.acpPost(
        {
          serverId,
          message: { jsonrpc: "2.0", id: `${row.id}-${String(message.method)}`, ...message },
          who,
          ...(agent ? { agent, origin: originOf(row) } : {}),
        },
        timeoutMs,
      );
    const init = await post({ method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, this.host.startTimeoutMs, row.agent);
    if (!init.ok) return this.notStarted(row, init.problem);
    const meta = {
      ...(row.worktree ? { [WORKTREE_META]: parseStored(jsonText(TaskRequest.shape.worktree.unwrap()), row.worktree, `task ${row.id}'s worktree`) } : {}),
      ...(row.policy ? { [POLICY_META]: parseStored(jsonText(PermissionPolicy), row.policy, `task ${row.id}'s policy`) } : {}),
    };
    const params = { cwd: row.cwd, mcpServers: [], ...(Object.keys(meta).length ? { _meta: meta } : {}) };
    const created = await post({ method: "session/new", params }, this.host.startTimeoutMs);
    const sessionId = created.ok ? startedSessionId(created.value) : null;
    if (!created.ok || sessionId === null) {
      const why = created.ok ? (agentAnswer(created.value).error ?? "no sessionId in its answer") : "";
      return this.notStarted(row, created.ok ? { code: "stream_error", detail: `the agent did not start a session: ${why}` } : created.problem);
    }
    const session = this.host.recordOf(serverId, sessionId);
    // Cancelled (or timed out) while its agent started: its prompt is never sent, and its row stays as it ended.
    const current = this.store.get(row.id);
    if (!current || FINISHED_TASK_STATES.has(current.state)) {
      if (current) this.store.put({ ...current, session_id: session?.id ?? null, acp_session_id: sessionId });
      await this.host.call("acp.delete", { serverId }, 30_000).catch(() => undefined);
      return this.drain();
    }
    row.session_id = session?.id ?? null;
    row.acp_session_id = sessionId;
    this.store.put(row);
    const leftMs = Math.max(1000, (row.started_at ?? Date.now()) + row.deadline_s * 1000 - Date.now());
    const turn = await post(
      { method: "session/prompt", params: { sessionId, prompt: parseStored(jsonText(TaskRequest.shape.prompt), row.prompt, `task ${row.id}'s prompt`) } },
      leftMs + 30_000,
    );
    const answer = turn.ok ? agentAnswer(turn.value) : null;
    const stopReason = answer?.result !== undefined ? stopReasonOf(answer.result) : null;
    const error = !turn.ok ? turn.problem.detail : (answer?.error ?? null);
    const succeeded = error === null && stopReason === "end_turn";
    this.finish(row.id, succeeded ? "succeeded" : "failed", {
      stopReason,
      error: error ?? (succeeded ? null : `the turn ended: ${stopReason ?? "no stop reason"}`),
    });
    // Its agent is not needed any more: the session stays, and comes back on a prompt of a person's.
    await this.host.call("acp.delete", { serverId }, 30_000).catch(() => undefined);
    await this.drain();
  }

  /** It could not start: back in the queue when the machine went away, else failed. */
  private notStarted(row: TaskRow, problem: ProblemInit): Promise<void> {
    if (problem.code === "machine_offline" || problem.code === "machine_restarted") {
      const current = this.store.get(row.id);
      if (current?.state === "running") {
        const queued = { ...current, state: "queued" as const, started_at: null };
        this.store.put(queued);
        this.host.changed?.(this.toTask(queued));
      }
      return Promise.resolve();
    }
    this.finish(row.id, "failed", { stopReason: null, error: problem.detail });
    return this.drain();
  }

  /** A task ends once: a later word (its cancelled turn's answer) does not change how it ended. */
  private finish(id: string, state: TaskRow["state"], how: { stopReason: string | null; error: string | null }): void {
    const row = this.store.get(id);
    if (!row || FINISHED_TASK_STATES.has(row.state)) return;
    const said = row.session_id ? this.lastWords.get(row.session_id) : undefined;
    if (row.session_id) this.lastWords.delete(row.session_id);
    const branch = row.session_id ? (this.host.session(row.session_id)?.worktree?.branch ?? null) : null;
    const result: TaskResult = { stopReason: how.stopReason, lastMessage: said?.lastLine ?? null, changes: said?.changes ?? null, branch, error: how.error };
    const ended = { ...row, state, ended_at: Date.now(), result: JSON.stringify(result) };
    this.store.put(ended);
    this.storage.kv.delete(`${END_KEY}${id}`);
    this.storage.kv.delete(`${MAX_COST_KEY}${id}`);
    this.host.changed?.(this.toTask(ended));
    if (row.report) void this.reportOn(ended, IssueRef.parse(JSON.parse(row.report)), result);
  }

  /** A GitHub trigger's task says how it ended on its issue (through the machine's GitHub CLI, when it has one). */
  private async reportOn(row: TaskRow, issue: IssueRef, result: TaskResult): Promise<void> {
    const body = reportText(row, result);
    const posted = await this.host.call("gh.comment", { ...issue, cwd: this.host.session(row.session_id ?? "")?.cwd ?? row.cwd, body });
    if (!posted.ok || !posted.value.posted) {
      console.error(
        `task ${row.id}: its result was not posted on ${issue.repository}#${issue.issue}:`,
        posted.ok ? posted.value.reason : posted.problem.detail,
      );
    }
  }

  private async cancel(id: string): Promise<Outcome<Task>> {
    const row = this.store.get(id);
    if (!row) return notFound(id);
    if (FINISHED_TASK_STATES.has(row.state)) return { ok: true, value: this.toTask(row) };
    await this.stop(row, "cancelled", null);
    return { ok: true, value: this.toTask(this.store.get(id)!) };
  }

  /**
   * The cost a session's agent reported (its running total): a task whose total passes its `maxCostUsd` is
   * cancelled, saying why.
   */
  async costReported(sessionId: string, cost: Cost): Promise<void> {
    const row = this.store.bySession(sessionId);
    if (row?.state !== "running") return;
    const max = getStoredSync(this.storage.kv, `${MAX_COST_KEY}${row.id}`, MaxCost);
    if (max === undefined || cost.currency !== "USD" || cost.amount <= max) return;
    await this.stop(row, "cancelled", `its cost ($${cost.amount}) passed its maxCostUsd ($${max})`);
  }

  /** End a task now: a queued one never runs; a running one's turn is cancelled (`session/cancel`). */
  private async stop(row: TaskRow, state: "cancelled" | "timed_out", why: string | null): Promise<void> {
    const wasRunning = row.state === "running";
    this.finish(row.id, state, { stopReason: null, error: why });
    if (wasRunning && row.acp_session_id) {
      await this.host.acpPost(
        { serverId: row.id, message: { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: row.acp_session_id } }, who: row.created_by },
        30_000,
      );
    }
  }

  /** The alarm rang: tasks past their deadline are cancelled as timed out. */
  async runDue(now: number): Promise<void> {
    for (const [key, atMs] of listStoredSync(this.storage.kv, END_KEY, z.number())) {
      if (atMs > now) continue;
      this.storage.kv.delete(key);
      const row = this.store.get(key.slice(END_KEY.length));
      if (row?.state === "running") await this.stop(row, "timed_out", `its deadline (${row.deadline_s} s) passed`);
    }
  }

  /** The earliest deadline of a running task (null: none). */
  nextDueMs(): number | null {
    let next: number | null = null;
    for (const [, atMs] of listStoredSync(this.storage.kv, END_KEY, z.number())) next = next === null ? atMs : Math.min(next, atMs);
    return next;
  }

  /** The machine is back: tasks that waited for it start. */
  resumed(): void {
    this.host.waitUntil(this.drain());
  }

  private endAt(id: string, atMs: number): void {
    this.storage.kv.put(`${END_KEY}${id}`, atMs);
    void this.host.wake(atMs);
  }

  /** A session's event: a task's turn said its last words. Answers whether people should hear of it (`notify`). */
  event(event: RuntimeEvent): boolean {
    if (!("session" in event)) return true;
    const row = this.store.bySession(event.session.id);
    if (!row) return true;
    if (event.type === "turn.finished" && row.state === "running")
      this.lastWords.set(event.session.id, { lastLine: event.lastLine, changes: event.changes ?? null });
    return row.notify === 1;
  }

  private toTask(row: TaskRow): Task {
    const session = row.session_id ? this.host.session(row.session_id) : null;
    const state = row.state === "running" && session?.state === "waiting" ? "waiting" : row.state;
    return {
      id: row.id,
      machine: this.host.machine(),
      agent: row.agent,
      cwd: session?.cwd ?? row.cwd,
      title: row.title,
      state,
      session: row.session_id,
      createdBy: row.created_by,
      createdAtMs: row.created_at,
      startedAtMs: row.started_at,
      endedAtMs: row.ended_at,
      deadlineSeconds: row.deadline_s,
      worktree: row.worktree !== null,
      origin: originOf(row),
      result: resultOf(row),
    };
  }
}

/** What a task's comment on its issue says: how it ended, its last words, what it changed and where. */
export function reportText(row: Pick<TaskRow, "id" | "state" | "agent">, result: TaskResult): string {
  const lines = [`**${row.agent}** finished task \`${row.id}\`: ${row.state.replace("_", " ")}.`];
  if (result.lastMessage) lines.push("", `> ${result.lastMessage.slice(0, 2000)}`);
  if (result.error) lines.push("", `Error: ${result.error.slice(0, 2000)}`);
  if (result.changes) lines.push("", `Changes: ${summaryText(result.changes)}${result.branch ? ` on branch \`${result.branch}\`` : ""}.`);
  return lines.join("\n");
}

function notFound(id: string): Outcome<never> {
  return { ok: false, problem: { code: "not_found", detail: `no task '${id}' on this machine` } };
}

/** The agent's answer to a call that waited for one, as the recorder reads it (a 202 carries none). */
function agentAnswer(result: AcpPostResult): { result?: unknown; error?: string } {
  return result.status === 200 ? answerOf(result.body) : { error: "no answer" };
}
