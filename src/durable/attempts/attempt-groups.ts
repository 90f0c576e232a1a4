/**
 * Attempt groups, the team's side (docs/architecture.md, "Attempt groups"): a group spans machines, so
 * its record is the team's (group-book.ts); each attempt is a task of its machine, whose object runs it,
 * checks it and reports its start, check and end here (machine-attempts.ts). Picking, discarding and
 * cancelling are asked of the attempts' machines and recorded here. Answers crossing a Durable Object's
 * boundary are parsed, never cast.
 */
import {
  type Attempt,
  type AttemptGroup,
  type AttemptGroupRequest,
  type AttemptReport,
  attemptBranch,
  AttemptDiscarded,
  AttemptPicked,
  AttemptStarted,
  FINISHED_ATTEMPT_STATES,
  type GroupBase,
  type GroupAnswer,
  type GroupCall,
  type MachineAttemptCall,
  type PickRequest,
  type AttemptsTemplate,
  type AttemptState,
  type UnfinishedAttempt,
} from "@agent-runtime/protocol/attempts";
import type { OpArgs } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { PROBLEMS, type ProblemCode } from "@agent-runtime/protocol/problems";
import { type IssueRef, TASK_DEADLINE_DEFAULT_SECONDS, TaskState, type TaskOrigin } from "@agent-runtime/protocol/tasks";
import { z } from "zod";
import { randomHex16 } from "../../lib/ids";
import { GroupBook } from "./group-book";
import { summaryOf } from "./group-summary";

export interface GroupHost {
  /** One call on a machine object's attempts; its answer is an Outcome, parsed here. */
  attemptCall(machine: string, call: MachineAttemptCall): Promise<unknown>;
  /** `attempts.base` on a machine's sidecar (an Outcome, parsed here). */
  base(machine: string, args: OpArgs<"attempts.base">): Promise<unknown>;
  /** A finished group's summary on its issue, through a machine's GitHub CLI (`gh.comment`). */
  comment(machine: string, args: OpArgs<"gh.comment">): Promise<unknown>;
  waitUntil(work: Promise<unknown>): void;
}

const BaseAnswer = z.object({ branch: z.string().nullable(), commit: z.string().regex(/^[0-9a-f]{40}$/) });
const Posted = z.object({ posted: z.boolean(), reason: z.string().nullable() });

const Problem = z.object({
  // The table's keys are its codes (Object.keys types them as strings); z.enum wants them as a non-empty tuple.
  code: z.enum(Object.keys(PROBLEMS) as [ProblemCode, ...ProblemCode[]]),
  detail: z.string(),
  extensions: z.record(z.string(), z.unknown()).optional(),
});
function outcomeOf<T>(value: z.ZodType<T>, answer: unknown): Outcome<T> {
  const parsed = z.union([z.object({ ok: z.literal(true), value }), z.object({ ok: z.literal(false), problem: Problem })]).parse(answer);
  return parsed.ok ? { ok: true, value: parsed.value } : { ok: false, problem: parsed.problem };
}
const Started = AttemptStarted.extend({ state: TaskState });

export class AttemptGroups {
  private readonly book: GroupBook;

  constructor(
    storage: DurableObjectStorage,
    private readonly host: GroupHost,
  ) {
    this.book = new GroupBook(storage);
  }

  async handle(call: GroupCall): Promise<Outcome<GroupAnswer>> {
    switch (call.op) {
      case "create":
        return this.start(call.request, call.machines, call.who, null);
      case "get": {
        const group = this.book.get(call.id);
        return group ? { ok: true, value: group } : notFound(call.id);
      }
      case "list":
        return { ok: true, value: { groups: this.book.list(call.scope, call.limit) } };
      case "report":
        this.report(call.report);
        return { ok: true, value: null };
      case "cancel":
        return this.cancel(call.id);
      case "pick":
        return this.pick(call.id, call.request, call.who);
      case "discard":
        return this.discard(call.id, call.n);
      case "unfinished":
        return { ok: true, value: { attempts: this.unfinished(call.machine) } };
    }
  }

  /** A GitHub trigger's or a schedule's attempts (group-book.ts keeps them beside the team's rows). */
  keepTemplate(owner: string, spec: AttemptsTemplate | null): void {
    this.book.keepTemplate(owner, spec);
  }

  templateOf(owner: string): AttemptsTemplate | null {
    return this.book.templateOf(owner);
  }

  /** Whether a group still has an attempt going (a schedule skips its next run meanwhile). */
  going(id: string): boolean {
    return this.book.get(id)?.state === "running";
  }

  /**
   * Agree the base, then start every attempt. The machines that are here agree it: the first resolves
   * `base` (its current branch by default) to a commit, each other must hold that commit. A machine that is
   * away is checked when its attempt starts (its worktree is made from that commit, or fails in git's words).
   */
  /** `origin`: what started the group (a caller's request is `task`); the team's sandbox rules match each attempt on it. */
  async start(
    request: AttemptGroupRequest,
    machines: string[],
    who: string,
    issue: IssueRef | null,
    origin: TaskOrigin = "task",
  ): Promise<Outcome<AttemptGroup>> {
    let base: GroupBase | null = null;
    for (const machine of [...new Set(machines)]) {
      const args: OpArgs<"attempts.base"> = { cwd: request.cwd, ...(request.base ? { base: request.base } : {}), ...(base ? { commit: base.commit } : {}) };
      const answer: Outcome<z.infer<typeof BaseAnswer>> = outcomeOf(BaseAnswer, await this.host.base(machine, args));
      if (!answer.ok && answer.problem.code === "machine_offline") continue;
      if (!answer.ok) return { ok: false, problem: { ...answer.problem, detail: `on machine '${machine}': ${answer.problem.detail}` } };
      base ??= { ...answer.value, agreedOn: machine };
    }
    if (!base)
      return conflict(
        `none of the machines named (${[...new Set(machines)].join(", ")}) is connected to agree the base commit on: start the group when one is`,
      );
    const id = `grp-${randomHex16().slice(0, 12)}`;
    return { ok: true, value: await this.create(id, request, machines, base, who, issue, origin) };
  }

  private async create(
    id: string,
    request: AttemptGroupRequest,
    machines: string[],
    base: GroupBase,
    who: string,
    issue: IssueRef | null,
    origin: TaskOrigin,
  ): Promise<AttemptGroup> {
    const attempts: Attempt[] = request.attempts.map((a, i) => ({
      n: i + 1,
      agent: a.agent,
      machine: machines[i]!,
      task: null,
      branch: attemptBranch(id, i + 1, a.agent),
      state: "queued",
      verdict: null,
      check: null,
      changes: null,
      costUsd: null,
      startedAtMs: null,
      endedAtMs: null,
      durationMs: null,
      error: null,
      discarded: false,
    }));
    const title = request.prompt.trim().split("\n")[0]!.slice(0, 200) || "(no text)";
    const deadlineSeconds = request.deadlineSeconds ?? TASK_DEADLINE_DEFAULT_SECONDS;
    const group: AttemptGroup = {
      ...{ id, state: "running", title, cwd: request.cwd, base, check: request.check ?? null, deadlineSeconds },
      ...{ createdBy: who, createdAtMs: Date.now(), attempts, picked: null, issue },
    };
    this.book.put(group);
    this.book.trim();
    const check = request.check ?? null;
    const answers = await Promise.all(
      attempts.map(async (a) => {
        const policy = request.policy ?? null;
        const run = {
          group: id,
          n: a.n,
          agent: a.agent,
          cwd: request.cwd,
          prompt: request.prompt,
          branch: a.branch,
          base,
          check,
          deadlineSeconds,
          policy,
          who,
          origin,
        };
        try {
          return outcomeOf(Started, await this.host.attemptCall(a.machine, { op: "start", run }));
        } catch (err) {
          return { ok: false as const, problem: { code: "internal" as const, detail: `its machine's object failed: ${String(err)}` } };
        }
      }),
    );
    // Read again: an attempt may have reported meanwhile (started, even ended).
    const now = this.book.get(id)!;
    for (const [i, answer] of answers.entries()) {
      const attempt = now.attempts[i]!;
      if (!answer.ok) {
        Object.assign(attempt, { state: "failed", error: answer.problem.detail });
        finished(attempt, Date.now());
        continue;
      }
      attempt.task = answer.value.task;
      if (attempt.state === "queued" && answer.value.state === "running") Object.assign(attempt, { state: "running", startedAtMs: answer.value.startedAtMs });
    }
    return this.save(now);
  }

  /**
   * An attempt's word from its machine. Reports may come again (a machine redelivers what it could not
   * be sure landed) or late: nothing finished is changed again (a cancel said first stays), and nothing
   * goes back (a `running` after `checking` is old news). A report carries totals, never increments, so a
   * repeated one counts nothing twice.
   */
  private report(report: AttemptReport): void {
    const group = this.book.get(report.group);
    const attempt = group?.attempts[report.n - 1];
    if (!group || !attempt || FINISHED_ATTEMPT_STATES.has(attempt.state)) return;
    if (STAGE[report.state] < STAGE[attempt.state]) return;
    Object.assign(attempt, {
      state: report.state,
      task: report.task ?? attempt.task,
      startedAtMs: report.startedAtMs ?? attempt.startedAtMs,
      endedAtMs: report.endedAtMs,
      check: report.check ?? attempt.check,
      changes: report.changes ?? attempt.changes,
      costUsd: report.costUsd ?? attempt.costUsd,
      error: report.error,
    });
    if (FINISHED_ATTEMPT_STATES.has(attempt.state)) finished(attempt, attempt.endedAtMs ?? Date.now());
    this.save(group);
  }

  /** The attempts not finished on `machine`, as this object holds them. */
  private unfinished(machine: string): UnfinishedAttempt[] {
    return this.book
      .runningOn(machine)
      .flatMap((g) =>
        g.attempts
          .filter((a) => a.machine === machine && !FINISHED_ATTEMPT_STATES.has(a.state))
          .map((a) => ({ group: g.id, n: a.n, state: a.state, task: a.task })),
      );
  }

  /** Every attempt not finished stops (each machine's queued task never runs, a turn is cancelled, a check ended). */
  private async cancel(id: string): Promise<Outcome<AttemptGroup>> {
    const group = this.book.get(id);
    if (!group) return notFound(id);
    const going = group.attempts.filter((a) => !FINISHED_ATTEMPT_STATES.has(a.state));
    const machines = [...new Set(going.map((a) => a.machine))];
    const answers = await Promise.all(machines.map((m) => this.host.attemptCall(m, { op: "cancel", group: id }).then((a) => outcomeOf(z.unknown(), a))));
    const refused = answers.find((a) => !a.ok);
    const now = this.book.get(id)!;
    for (const attempt of now.attempts)
      if (!FINISHED_ATTEMPT_STATES.has(attempt.state) && machines.includes(attempt.machine)) {
        Object.assign(attempt, { state: "cancelled", error: null });
        finished(attempt, Date.now());
      }
    this.save(now, true);
    return refused && !refused.ok ? refused : { ok: true, value: now };
  }

  private async pick(id: string, request: PickRequest, who: string): Promise<Outcome<AttemptGroup>> {
    const group = this.book.get(id);
    if (!group) return notFound(id);
    const attempt = group.attempts[request.n - 1];
    if (!attempt) return { ok: false, problem: { code: "not_found", detail: `${id} has no attempt ${request.n}` } };
    if (group.picked) return conflict(`attempt ${group.picked.n} of ${id} was picked already (${group.picked.action})`);
    if (attempt.state !== "done") return conflict(`attempt ${request.n} is ${attempt.state}: only an attempt whose turn ended (done) can be picked`);
    if (attempt.discarded) return conflict(`attempt ${request.n} was discarded`);
    const title = request.title ?? group.title;
    const answer = outcomeOf(
      AttemptPicked,
      await this.host.attemptCall(attempt.machine, { op: "pick", group: id, n: request.n, action: request.action, title }),
    );
    if (!answer.ok) return answer;
    const now = this.book.get(id)!;
    now.picked = { n: request.n, action: request.action, ...answer.value, atMs: Date.now(), by: who };
    return { ok: true, value: this.save(now) };
  }

  /** One attempt, or every attempt not picked: each machine removes what it made, and says what. */
  private async discard(
    id: string,
    n: number | undefined,
  ): Promise<Outcome<{ discarded: (z.infer<typeof AttemptDiscarded> & { n: number })[]; group: AttemptGroup }>> {
    const group = this.book.get(id);
    if (!group) return notFound(id);
    if (n !== undefined && !group.attempts[n - 1]) return { ok: false, problem: { code: "not_found", detail: `${id} has no attempt ${n}` } };
    const targets = n !== undefined ? [group.attempts[n - 1]!] : group.attempts.filter((a) => !a.discarded && a.n !== group.picked?.n);
    const going = targets.find((a) => !FINISHED_ATTEMPT_STATES.has(a.state));
    if (going) return conflict(`attempt ${going.n} is ${going.state}: cancel it first (POST /v1/attempts/${id}/cancel)`);
    const discarded: (z.infer<typeof AttemptDiscarded> & { n: number })[] = [];
    let refusal: Outcome<never> | null = null;
    for (const attempt of targets) {
      const answer = outcomeOf(AttemptDiscarded, await this.host.attemptCall(attempt.machine, { op: "discard", group: id, n: attempt.n }));
      if (!answer.ok) {
        refusal = answer;
        break;
      }
      discarded.push({ n: attempt.n, ...answer.value });
    }
    const now = this.book.get(id)!;
    for (const d of discarded) now.attempts[d.n - 1]!.discarded = true;
    this.save(now);
    return refusal ?? { ok: true, value: { discarded, group: now } };
  }

  private save(group: AttemptGroup, cancelling = false): AttemptGroup {
    const ending = group.state === "running" && group.attempts.every((a) => FINISHED_ATTEMPT_STATES.has(a.state));
    if (ending) group.state = cancelling ? "cancelled" : "finished";
    this.book.put(group);
    // A trigger's group says how it went on its issue once: when it leaves running.
    if (ending && group.issue) this.host.waitUntil(this.summarise(group, group.issue));
    return group;
  }

  private async summarise(group: AttemptGroup, issue: IssueRef): Promise<void> {
    const machine = group.attempts[0]!.machine;
    const answer = outcomeOf(Posted, await this.host.comment(machine, { ...issue, cwd: group.cwd, body: summaryOf(group) }));
    const why = !answer.ok ? answer.problem.detail : answer.value.posted ? null : answer.value.reason;
    if (why) console.error(`attempt group ${group.id}: its summary was not posted on ${issue.repository}#${issue.issue}: ${why}`);
  }
}

/** Where an attempt is in its life: a report never moves it back. */
const STAGE: Record<AttemptState, number> = { queued: 0, running: 1, checking: 2, done: 3, failed: 3, cancelled: 3, timed_out: 3 };

function finished(attempt: Attempt, atMs: number): void {
  attempt.endedAtMs = atMs;
  attempt.durationMs = attempt.startedAtMs === null ? null : Math.max(0, atMs - attempt.startedAtMs);
  attempt.verdict = attempt.state !== "done" ? null : attempt.check === null ? "no_check" : attempt.check.exitCode === 0 ? "passed" : "failed";
}

function notFound(id: string): Outcome<never> {
  return { ok: false, problem: { code: "not_found", detail: `no attempt group '${id}'` } };
}

function conflict(detail: string): Outcome<never> {
  return { ok: false, problem: { code: "conflict", detail } };
}
