/**
 * The team's permission policy at the machine's object (docs/architecture.md, "The permission policy").
 * Every `session/request_permission` an agent writes is judged here before anyone sees it: the SSE
 * readers of its server and the `/acp` connections ask `hides()`, the session recorder asks `judge()`.
 * The verdict is computed once per request (by its sequence number in the server's stream) and kept, so
 * all of them agree whoever met the request first. A request a rule allows or denies is answered by the
 * runtime with the agent's own option, never shown to a person, and a client's answer to it is refused.
 */
import type { JsonRpcId } from "@agent-runtime/protocol/acp";
import { PermissionPolicy, type PolicyVerdict, TeamPolicy } from "@agent-runtime/protocol/policy";
import { decidePermission, permissionFactsOf, policyOptionOf } from "@agent-runtime/protocol/policy-eval";
import type { PendingRequest, Session } from "@agent-runtime/protocol/sessions";
import { type StoredDocument, storedDocument } from "../config/team-documents";
import { getStoredSync } from "../storage/stored";
import { z } from "zod";
import { PolicyDeadlines, type Deadline } from "./policy-deadlines";
import type { MachineFeature } from "../machine/feature";

/** Verdicts kept in memory (by stream position); the oldest go first past this. */
const KEPT_VERDICTS = 2048;
const POLICY_KEY = "policy";
const SESSION_POLICY_PREFIX = "policy-session:";

export interface GateHost {
  storage: DurableObjectStorage;
  machine(): string;
  /** The recorded session an agent's request belongs to (its folder and agent), if any. */
  sessionOf(serverId: string, acpSessionId: string): Session | null;
  /** Send the runtime's answer to the agent (a JSON-RPC response on its server). */
  answer(serverId: string, response: { jsonrpc: "2.0"; id: JsonRpcId; result: unknown }): Promise<void>;
  /** One line of the team's audit log (batched by the host). */
  audit(entry: { route: string; status: number; machine: string }): void;
  /** Answer a request a person did not answer in time (if it still waits), as its session's client would: cancel is a question's. */
  answerLate(session: string, requestId: JsonRpcId, decision: Deadline["onTimeout"], why: string): Promise<void>;
  wake(atMs: number): Promise<void>;
}

/** What the recorder writes for a request a rule decided. */
export interface Ruled {
  /** null: a question's deadline (no rule judges questions). */
  verdict: PolicyVerdict | null;
  /** Answered now (allow or deny), with this option (null: cancelled); else a person is asked. */
  answered: { optionId: string | null; name: string | null } | null;
  /** An ask with a deadline: when the policy answers for the person. */
  deadline: PendingRequest["deadline"] | null;
}

export class PermissionGate implements MachineFeature {
  private policy: StoredDocument<TeamPolicy> | null = null;
  private readonly verdicts = new Map<string, PolicyVerdict | null>();
  /** Requests the runtime answered, by server and JSON-RPC id: a client's answer to one is refused. */
  private readonly answeredIds = new Set<string>();
  private readonly deadlines: PolicyDeadlines;

  constructor(private readonly host: GateHost) {
    this.deadlines = new PolicyDeadlines(host.storage, { wake: host.wake, answer: (d) => this.timedOut(d) });
  }

  /** The alarm: requests a person did not answer by their deadline are answered as their client would. */
  runDue(nowMs: number): Promise<void> {
    return this.deadlines.runDue(nowMs);
  }

  nextDueMs(): number | null {
    return this.deadlines.nextDueMs();
  }

  /** The team's policy as of `stored` (from a connect or the fan-out): kept in this object's storage, written only when it changed. */
  keep(stored: StoredDocument<TeamPolicy>): boolean {
    if (this.current().version === stored.version) return false;
    this.policy = stored;
    this.host.storage.kv.put(POLICY_KEY, stored);
    return true;
  }

  /** The team's whole policy document: its permission rules, and its sandbox rules (sandbox/server-sandbox.ts). */
  current(): StoredDocument<TeamPolicy> {
    this.policy ??= getStoredSync(this.host.storage.kv, POLICY_KEY, storedDocument(TeamPolicy)) ?? {
      version: 0,
      config: { rules: [] },
      updatedAtMs: null,
    };
    return this.policy;
  }

  /** A session's own policy (`_meta["agent-runtime/policy"]` on `session/new`, or its task's): kept beside the team's. */
  keepSessionPolicy(serverId: string, acpSessionId: string, policy: PermissionPolicy): void {
    this.host.storage.kv.put(`${SESSION_POLICY_PREFIX}${serverId}\n${acpSessionId}`, policy);
  }

  private sessionPolicy(serverId: string, acpSessionId: string): PermissionPolicy | null {
    const stored = this.host.storage.kv.get(`${SESSION_POLICY_PREFIX}${serverId}\n${acpSessionId}`);
    const parsed = PermissionPolicy.safeParse(stored);
    return parsed.success ? parsed.data : null;
  }

  /** The verdict on the request at `seq` of a server's stream (null: not a permission request, or of no recorded session). */
  private verdictAt(serverId: string, seq: number, params: Record<string, unknown>): PolicyVerdict | null {
    const key = `${serverId}\n${seq}`;
    const known = this.verdicts.get(key);
    if (known !== undefined) return known;
    const acpSessionId = typeof params.sessionId === "string" ? params.sessionId : null;
    const session = acpSessionId ? this.host.sessionOf(serverId, acpSessionId) : null;
    const verdict = session
      ? decidePermission(this.current().config, this.sessionPolicy(serverId, acpSessionId!), permissionFactsOf(params), {
          agent: session.agent,
          machine: session.machine,
          cwd: session.cwd,
        })
      : null;
    this.verdicts.set(key, verdict);
    if (this.verdicts.size > KEPT_VERDICTS) this.verdicts.delete(this.verdicts.keys().next().value!);
    return verdict;
  }

  /** Is this event of a server's stream a request the policy answers (so no reader or client sees it)? */
  hides(serverId: string, seq: number, text: string): boolean {
    // Most events are updates: a look at the text spares parsing them.
    if (!text.includes('"session/request_permission"')) return false;
    const message = parseRequest(text);
    if (!message) return false;
    const verdict = this.verdictAt(serverId, seq, message.params);
    return verdict !== null && verdict.decision !== "ask" && this.optionFor(verdict, message.params) !== undefined;
  }

  /** The option the runtime answers with (null: cancelled); undefined when it cannot answer (an allow the agent offers no option for). */
  private optionFor(verdict: PolicyVerdict, params: Record<string, unknown>): string | null | undefined {
    if (verdict.decision === "ask") return undefined;
    const options = Array.isArray(params.options) ? params.options : [];
    const offered = options.flatMap((o: unknown) => {
      const option = OfferedOption.safeParse(o);
      return option.success ? [{ optionId: option.data.optionId, kind: String(option.data.kind ?? "") }] : [];
    });
    const option = policyOptionOf(verdict.decision, offered);
    return option ?? (verdict.decision === "deny" ? null : undefined);
  }

  /**
   * The recorder met a permission request of a recorded session: a rule that allows or denies answers the
   * agent now (audited); an ask with a deadline is remembered; null when no rule spoke (a person is asked).
   */
  judge(serverId: string, seq: number, session: Session, id: JsonRpcId, params: Record<string, unknown>, pending: PendingRequest): Ruled | null {
    if (pending.kind === "elicitation") return this.questionDeadline(session, id, pending);
    const verdict = this.verdictAt(serverId, seq, params);
    const optionId = verdict ? this.optionFor(verdict, params) : undefined;
    // An id a restarted agent uses again, for a request a person answers this time, is theirs to answer.
    if (optionId === undefined) this.answeredIds.delete(answeredKey(serverId, id));
    if (!verdict || verdict.rule === null) return null;
    const who = `${verdict.source === "session" ? "the session's policy" : "the team's policy"}, ${verdict.ruleName}`;
    if (verdict.decision === "ask" || optionId === undefined) {
      if (verdict.decision !== "ask" || !verdict.ask) return { verdict, answered: null, deadline: null };
      const deadline = { atMs: pending.atMs + verdict.ask.timeoutSeconds * 1000, onTimeout: verdict.ask.onTimeout, rule: who };
      this.deadlines.add({ session: session.id, requestId: id, ...deadline });
      return { verdict, answered: null, deadline };
    }
    this.answeredIds.add(answeredKey(serverId, id));
    const outcome = optionId === null ? { outcome: "cancelled" } : { outcome: "selected", optionId };
    void this.host.answer(serverId, { jsonrpc: "2.0", id, result: { outcome } }).catch((err: unknown) => {
      console.error(`the policy's answer to request ${JSON.stringify(id)} of session '${session.id}' did not reach the agent:`, err);
    });
    this.host.audit({
      route: `policy: ${verdict.decision} "${pending.title.slice(0, 120)}" in session ${session.id} (${who})`,
      status: verdict.decision === "allow" ? 200 : 403,
      machine: this.host.machine(),
    });
    return { verdict, answered: { optionId, name: pending.options.find((o) => o.optionId === optionId)?.name ?? null }, deadline: null };
  }

  /** An agent's question is always a person's to answer; the team's `questions` deadline cancels it when nobody did. */
  private questionDeadline(session: Session, id: JsonRpcId, pending: PendingRequest): Ruled | null {
    const questions = this.current().config.questions;
    if (!questions) return null;
    const deadline = { atMs: pending.atMs + questions.timeoutSeconds * 1000, onTimeout: "cancel" as const, rule: "the team's policy, questions" };
    this.deadlines.add({ session: session.id, requestId: id, ...deadline });
    return { verdict: null, answered: null, deadline };
  }

  /** Did the runtime answer this request for the policy? (A client's answer to it is then refused.) */
  answeredByPolicy(serverId: string, id: JsonRpcId): boolean {
    return this.answeredIds.has(answeredKey(serverId, id));
  }

  private async timedOut(deadline: Deadline): Promise<void> {
    this.host.audit({
      route: `policy: ${deadline.onTimeout} after nobody answered in time in session ${deadline.session} (${deadline.rule})`,
      // A question cancelled: nobody answered it in time (408), neither allowed nor refused.
      status: deadline.onTimeout === "allow" ? 200 : deadline.onTimeout === "cancel" ? 408 : 403,
      machine: this.host.machine(),
    });
    await this.host.answerLate(deadline.session, deadline.requestId, deadline.onTimeout, `nobody answered in time: ${deadline.onTimeout} (${deadline.rule})`);
  }
}

function answeredKey(serverId: string, id: JsonRpcId): string {
  return `${serverId}\n${JSON.stringify(id)}`;
}

/** An option an agent offers, as far as the policy reads it. */
const OfferedOption = z.object({ optionId: z.string(), kind: z.unknown() });
const PermissionRequest = z.object({ method: z.literal("session/request_permission"), params: z.record(z.string(), z.unknown()) });

function parseRequest(text: string): { params: Record<string, unknown> } | null {
  try {
    const message = PermissionRequest.safeParse(JSON.parse(text));
    return message.success ? { params: message.data.params } : null;
  } catch {
    return null;
  }
}
