/**
 * A machine's attempts (docs/architecture.md, "Attempt groups"): each is a task of this machine (queued
 * while it is away or busy, run within its task limit, with its deadline) in a worktree on the attempt's
 * own branch from the group's base commit. When its turn ends, what the agent left is committed on the
 * branch and counted against the base, then the group's check runs in the worktree, enclosed as its agent
 * was; the attempt reports to the team's object when it starts, checks and ends: never per message. A
 * report lost (the team unreachable, this object restarted, the sidecar gone mid-check) is made good by
 * reconciling with the team on the sidecar's hello and on the alarm.
 */
import type {
  AttemptDiff,
  AttemptReport,
  AttemptRun,
  AttemptState,
  MachineAttemptAnswer,
  MachineAttemptCall,
  UnfinishedAttempt,
} from "@agent-runtime/protocol/attempts";
import { CHECK_TIMEOUT_DEFAULT_SECONDS } from "@agent-runtime/protocol/attempts";
import type { MachineFeature } from "../machine/feature";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { Session } from "@agent-runtime/protocol/sessions";
import { FINISHED_TASK_STATES, type Task, type TaskCall, type TaskPage } from "@agent-runtime/protocol/tasks";
import { type RunRecord, RunStore } from "./run-store";

export interface AttemptsHost {
  machine(): string;
  tasks(call: TaskCall): Promise<Outcome<Task | TaskPage>>;
  session(id: string): Session | null;
  call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<Outcome<OpResult<N>>>;
  /** Tell the team's object (one call; the group is there); throws when it could not. */
  report(report: AttemptReport): Promise<void>;
  /** What the team's object holds as not finished on this machine (throws when it could not be asked). */
  unfinished(): Promise<UnfinishedAttempt[]>;
  /** Whether the sidecar is connected (or within its reconnect grace). */
  reachable(): boolean;
  /** Ring the object's alarm by then. */
  wake(atMs: number): void;
  waitUntil(work: Promise<unknown>): void;
}

const ENDED_AS: Record<string, AttemptState> = { failed: "failed", cancelled: "cancelled", timed_out: "timed_out" };
/** A call that failed because the sidecar went away: the work is done again when it is back, not reported failed. */
const MACHINE_GONE: ReadonlySet<string> = new Set(["machine_offline", "machine_restarted"]);
/** A report that did not reach the team is tried again (by reconciling) this much later. */
const REPORT_RETRY_MS = 30_000;

export class MachineAttempts implements MachineFeature {
  private readonly runs: RunStore;
  /** The attempts whose end is being settled, checked and reported by this instance now. */
  private readonly inFlight = new Set<string>();

  constructor(
    storage: DurableObjectStorage,
    private readonly host: AttemptsHost,
  ) {
    this.runs = new RunStore(storage);
  }

  async handle(call: MachineAttemptCall): Promise<Outcome<MachineAttemptAnswer>> {
    switch (call.op) {
      case "start":
        return this.start(call.run);
      case "cancel":
        return { ok: true, value: { cancelled: await this.cancel(call.group) } };
      case "pick":
        return this.pick(call.group, call.n, call.action, call.title);
      case "discard":
        return this.discard(call.group, call.n);
      case "diff":
        return this.diff(call.group, call.n, call.against);
    }
  }

  /** Its task, submitted: it starts now or when the machine is back and under its limit. */
  private async start(run: AttemptRun): Promise<Outcome<{ task: string; state: Task["state"]; startedAtMs: number | null }>> {
    const submitted = await this.host.tasks({
      op: "submit",
      machine: this.host.machine(),
      who: `${run.who} (attempt ${run.n} of ${run.group})`,
      // Unattended work: the team's sandbox rules for its origin (a caller's group, a trigger's) apply to each attempt.
      origin: run.origin,
      request: {
        agent: run.agent,
        cwd: run.cwd,
        prompt: run.prompt,
        worktree: { base: run.base.commit, branch: run.branch },
        deadlineSeconds: run.deadlineSeconds,
        ...(run.policy ? { policy: run.policy } : {}),
      },
    });
    if (!submitted.ok) return submitted;
    // A `submit` call answers its task (`TaskCall`'s answer is Task | TaskPage by the call, not by its type).
    const task = submitted.value as Task;
    this.runs.put({
      ...{ group: run.group, n: run.n, task: task.id, run, phase: "turn" },
      ...{ worktree: null, acp: null, check: null, discarded: false, final: null, unsent: false },
    });
    return { ok: true, value: { task: task.id, state: task.state, startedAtMs: task.startedAtMs } };
  }

  /** A task changed: an attempt's start is reported; its end settles it, checks it and reports. */
  taskChanged(task: Task): void {
    const record = this.runs.byTask(task.id);
    if (record?.phase !== "turn") return;
    if (!FINISHED_TASK_STATES.has(task.state)) {
      this.host.waitUntil(this.send(record, reportOf(record, task.state === "queued" ? "queued" : "running", task)));
      return;
    }
    this.host.waitUntil(this.afterTurn(record, task));
  }

  /**
   * Settle, check and report an attempt whose turn ended, once at a time. Work cut off because the sidecar
   * went away is not reported as failed: it is done again at once if the sidecar is back already (a
   * restarted one answers the hello that failed the call), else when it says hello (`reconcile`).
   */
  private async afterTurn(record: RunRecord, task: Task): Promise<void> {
    const key = keyOf(record);
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    try {
      for (let tries = 0; tries < 3; tries++) {
        if ((await this.settleAndCheck(record, task)) === "ended" || !this.host.reachable()) return;
      }
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async settleAndCheck(record: RunRecord, task: Task): Promise<"ended" | "interrupted"> {
    const session = task.session ? this.host.session(task.session) : null;
    if (session?.worktree) record.worktree = { repository: session.worktree.repository, path: session.worktree.path, branch: session.worktree.branch };
    if (session) record.acp = { agent: session.agent, sessionId: session.sessionId };
    this.runs.put(record);
    const report = reportOf(record, ENDED_AS[task.state] ?? "done", task);
    report.error = task.result?.error ?? null;
    // The session's summed usage (its record keeps the agent's cumulative cost): a total, so a report sent again counts nothing twice.
    report.costUsd = session?.usage?.cost?.currency === "USD" ? session.usage.cost.amount : null;
    // What the agent left is committed on its branch and counted, whatever the turn's end: the compare shows it.
    if (record.worktree) {
      const message = `${task.title}\n\nAttempt ${record.n} of ${record.group} (${record.run.agent} on this machine).`;
      const settled = await this.host.call("attempts.settle", { cwd: record.worktree.path, base: record.run.base.commit, message });
      if (!settled.ok && MACHINE_GONE.has(settled.problem.code)) return "interrupted";
      if (settled.ok) report.changes = settled.value.changes;
      else if (report.state === "done") Object.assign(report, { state: "failed", error: `its work could not be committed: ${settled.problem.detail}` });
    }
    if (report.state === "done" && record.run.check && record.worktree) {
      record.phase = "checking";
      this.runs.put(record);
      await this.send(record, { ...report, state: "checking", endedAtMs: null });
      const startedAt = task.startedAtMs ?? Date.now();
      const leftMs = startedAt + record.run.deadlineSeconds * 1000 - Date.now();
      const ownMs = (record.run.check.timeoutSeconds ?? CHECK_TIMEOUT_DEFAULT_SECONDS) * 1000;
      const timeoutMs = Math.max(1000, Math.min(ownMs, leftMs));
      // Enclosed as its agent was: the sandbox the team asked for the attempt's agent (the sidecar adds its owner's floor).
      const sandbox = session?.sandbox?.requested;
      const checked = await this.host.call(
        "attempts.check",
        { cwd: record.worktree.path, command: record.run.check.command, timeoutMs, key: keyOf(record), ...(sandbox ? { sandbox } : {}) },
        timeoutMs + 30_000,
      );
      const now = this.runs.get(record.group, record.n);
      if (now?.phase === "cancelled") report.state = "cancelled";
      else if (!checked.ok && MACHINE_GONE.has(checked.problem.code)) return "interrupted";
      else if (!checked.ok) Object.assign(report, { state: "failed", error: `the check could not run: ${checked.problem.detail}` });
      else {
        report.check = checked.value;
        // Stopped by the attempt's deadline rather than the check's own timeout: the attempt timed out.
        if (checked.value.timedOut && leftMs < ownMs)
          Object.assign(report, { state: "timed_out", error: `its deadline (${record.run.deadlineSeconds} s) passed during the check` });
      }
      record.check = report.check;
    }
    record.phase = "ended";
    report.endedAtMs = Date.now();
    record.final = report;
    this.runs.put(record);
    await this.send(record, report);
    return "ended";
  }

  /**
   * One report to the team. One that fails is not lost: the record says so, and the object's alarm (or the
   * sidecar's next hello) reconciles with the team (`reconcile`); the team takes a report twice harmlessly.
   */
  private async send(record: RunRecord, report: AttemptReport): Promise<void> {
    let sent = true;
    try {
      await this.host.report(report);
    } catch (err) {
      sent = false;
      console.error(`attempt ${record.n} of ${record.group}: its report (${report.state}) did not reach the team: ${String(err)}`);
      this.host.wake(Date.now() + REPORT_RETRY_MS);
    }
    record.unsent = !sent;
    this.runs.markSent(record.group, record.n, !sent);
  }

  /** The alarm rang: reconcile if a report failed (the machine object's feature list runs this: machine/features.ts). */
  async runDue(): Promise<void> {
    if (this.runs.anyUnsent()) await this.reconcile();
  }

  /** The sidecar is back and calls resumed: what the team missed of this machine's attempts is said again. */
  resumed(): void {
    this.host.waitUntil(this.reconcile());
  }

  /**
   * The attempts the team holds as not finished on this machine, set against what this machine knows (on
   * each hello, and when a report failed): an ended attempt's final report is sent again; a turn that
   * ended, or a check cut off, is settled and checked again (both do nothing twice: an attempt's work is
   * committed once, a check of the same key still running is ended first); a running task's state is
   * said again; an attempt this machine has no record of has failed.
   */
  async reconcile(): Promise<void> {
    if (!this.runs.used()) return;
    let held: UnfinishedAttempt[];
    try {
      held = await this.host.unfinished();
    } catch (err) {
      console.error(`attempts: could not reconcile with the team: ${String(err)}`);
      this.host.wake(Date.now() + REPORT_RETRY_MS);
      return;
    }
    this.runs.clearUnsent(); // what the team lacks is below; anything else it has, or no longer needs
    for (const attempt of held) {
      if (attempt.task === null) continue; // its start is still being answered
      const record = this.runs.get(attempt.group, attempt.n);
      if (!record) {
        const error = "its machine holds no record of this attempt";
        await this.host.report({ ...blankReport(attempt.group, attempt.n, attempt.task), state: "failed", endedAtMs: Date.now(), error }).catch(() => {});
        continue;
      }
      if (this.inFlight.has(keyOf(record))) continue;
      if (record.final) {
        await this.send(record, record.final);
        continue;
      }
      const found = record.task ? await this.host.tasks({ op: "get", id: record.task }) : null;
      const task = found?.ok && "state" in found.value ? found.value : null;
      if (!task) continue;
      if (record.phase === "turn" && !FINISHED_TASK_STATES.has(task.state)) {
        const state = task.state === "queued" ? "queued" : "running";
        if (state !== attempt.state) await this.send(record, reportOf(record, state, task));
        continue;
      }
      if (record.phase === "cancelled") {
        record.phase = "ended";
        record.final = { ...reportOf(record, "cancelled", task), endedAtMs: Date.now() };
        this.runs.put(record);
        await this.send(record, record.final);
        continue;
      }
      this.host.waitUntil(this.afterTurn(record, task));
    }
  }

  /** Every attempt of the group still going here stops: a queued task never runs, a turn is cancelled, a check is ended. */
  private async cancel(group: string): Promise<number> {
    let n = 0;
    for (const record of this.runs.ofGroup(group)) {
      if (record.phase === "turn" && record.task) {
        await this.host.tasks({ op: "cancel", id: record.task, who: "attempt group cancelled" });
        n++;
      } else if (record.phase === "checking") {
        record.phase = "cancelled";
        this.runs.put(record);
        await this.host.call("attempts.stopCheck", { key: `${group}-${record.n}` });
        n++;
      }
    }
    return n;
  }

  private async pick(
    group: string,
    n: number,
    action: "merge" | "pull-request",
    title: string,
  ): Promise<Outcome<{ how: string; commit: string | null; url: string | null }>> {
    const record = this.runs.get(group, n);
    if (!record?.worktree || record.discarded) return notHere(group, n, "its worktree");
    const { run, worktree } = record;
    if (action === "merge") {
      if (!run.base.branch)
        return { ok: false, problem: { code: "conflict", detail: "the group's base is a commit, not a branch: open a pull request instead" } };
      const merged = await this.host.call("attempts.merge", { cwd: worktree.repository, branch: worktree.branch, into: run.base.branch, message: title });
      return merged.ok ? { ok: true, value: { how: merged.value.how, commit: merged.value.commit, url: null } } : merged;
    }
    const pushed = await this.host.call("git.push", { cwd: worktree.path, branch: worktree.branch, setUpstream: true });
    if (!pushed.ok) return pushed;
    const opened = await this.host.call("git.pullRequest", {
      cwd: worktree.path,
      title,
      body: `Attempt ${n} of ${group} (${run.agent}), picked from ${this.runs.ofGroup(group).length} attempts on this machine.`,
      ...(run.base.branch ? { base: run.base.branch } : {}),
    });
    if (!opened.ok) return opened;
    return {
      ok: true,
      value: { how: opened.value.opened ? "pull request opened" : (opened.value.reason ?? "open it at the page"), commit: null, url: opened.value.url },
    };
  }

  /** Its worktree and branch removed, its session's checkpoints dropped: each said in the answer. */
  private async discard(group: string, n: number): Promise<Outcome<{ worktree: boolean; branch: boolean; checkpoints: boolean }>> {
    const record = this.runs.get(group, n);
    if (!record) return notHere(group, n, "a record");
    const removed = await this.host.call("attempts.discard", {
      cwd: record.worktree?.repository ?? record.run.cwd,
      path: record.worktree?.path ?? null,
      branch: record.worktree?.branch ?? record.run.branch,
    });
    if (!removed.ok) return removed;
    const dropped = record.acp ? await this.host.call("checkpoints.drop", record.acp) : null;
    record.discarded = true;
    this.runs.put(record);
    return { ok: true, value: { ...removed.value, checkpoints: dropped?.ok === true && dropped.value.deleted } };
  }

  private async diff(group: string, n: number, against: "base" | number): Promise<Outcome<AttemptDiff>> {
    const record = this.runs.get(group, n);
    if (!record) return notHere(group, n, "a record");
    const other = against === "base" ? null : this.runs.get(group, against);
    if (against !== "base" && !other) return notHere(group, against, "a record");
    const from = other ? other.run.branch : record.run.base.commit;
    const diffed = await this.host.call("attempts.diff", { cwd: record.worktree?.repository ?? record.run.cwd, from, to: record.run.branch });
    return diffed.ok ? { ok: true, value: { n, against, from, to: record.run.branch, ...diffed.value } } : diffed;
  }
}

function blankReport(group: string, n: number, task: string): AttemptReport {
  return { group, n, state: "queued", task, startedAtMs: null, endedAtMs: null, check: null, changes: null, costUsd: null, error: null };
}

function reportOf(record: RunRecord, state: AttemptState, task: Task): AttemptReport {
  return { ...blankReport(record.group, record.n, task.id), state, startedAtMs: task.startedAtMs };
}

function keyOf(record: RunRecord): string {
  return `${record.group}-${record.n}`;
}

function notHere(group: string, n: number, what: string): Outcome<never> {
  return { ok: false, problem: { code: "not_found", detail: `attempt ${n} of ${group} has no ${what} on this machine` } };
}
