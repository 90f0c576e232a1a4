/**
 * A machine object's sessions, wired (docs/architecture.md, "Sessions"): the recorder and its
 * subscriptions to the agents' streams, the calls made with its records, the prompt queue they share,
 * the permission policy's gate and the tasks the runtime drives, over the object's storage and its tunnel.
 */
import type { StreamEvent } from "@agent-runtime/protocol/frames";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import { policyOptionOf } from "@agent-runtime/protocol/policy-eval";
import type { AuditEntry } from "@agent-runtime/protocol/trust";
import { PermissionGate } from "../policy/permission-gate";
import { PolicyAudit } from "../policy/policy-audit";
import { SandboxNotices } from "./sandbox-notices";
import type { RuntimeEvent } from "../notifications/events";
import type { Tunnel } from "../machine/tunnel";
import type { MachineFeature } from "../machine/feature";
import { PromptQueueStore } from "./prompt-queue-store";
import { acpPostOutcome } from "./acp-post-outcome";
import { SessionRecorder } from "./recorder";
import { SessionCalls } from "./session-calls";
import { RecorderSubscriptions } from "./recorder-subscriptions";
import { TaskRunner } from "../tasks/task-runner";
import { ServerSandboxes } from "../sandbox/server-sandbox";
import type { Task } from "@agent-runtime/protocol/tasks";

export interface MachineSessionsHost {
  tunnel: Tunnel;
  /** The machine owner's sandbox floor, as its last hello said it (null: not said). */
  floor(): SandboxSpec | null;
  machine(): string;
  /** The machine recorded its first session (the team lists only such machines). */
  announce(): void;
  /** What a person away may want to hear of. */
  notify(event: RuntimeEvent): void;
  /** What the recorder hears of an agent's stream goes on to ACP's remote transport too. */
  relay: { events(serverId: string, events: StreamEvent[]): void; gone(serverId: string): void };
  /** Lines of the team's audit log (the permission policy's answers, batched). */
  appendAudit(entries: Omit<AuditEntry, "seq">[]): Promise<void>;
  waitUntil(work: Promise<unknown>): void;
  /** The object's one alarm, by this time at the latest. */
  wake(atMs: number): Promise<void>;
  sseIdleCloseMs: number;
  promptTimeoutMs: number;
  /** How long a task's agent may take to start (an install, a worktree). */
  startTimeoutMs: number;
  /** A task started, went back to the queue or ended (an attempt group's attempts report it). */
  taskChanged?(task: Task): void;
}

export interface MachineSessions {
  recorder: SessionRecorder;
  calls: SessionCalls;
  gate: PermissionGate;
  tasks: TaskRunner;
  subscriptions: RecorderSubscriptions;
  /** The sessions' part in the machine's comings and goings (machine/feature.ts). */
  feature: MachineFeature;
}

export function machineSessions(storage: DurableObjectStorage, host: MachineSessionsHost): MachineSessions {
  const { tunnel } = host;
  const queued = new PromptQueueStore(storage);
  const online = () => tunnel.live() !== null;
  const audit = new PolicyAudit({ append: host.appendAudit, waitUntil: host.waitUntil });
  const sandboxQuiet = new SandboxNotices();
  const recorder = new SessionRecorder(storage, {
    machine: host.machine,
    online,
    firstSession: host.announce,
    // A task's session is heard of as any session is, unless its task said not to notify.
    events: (event) => {
      if (event.type === "sandbox.blocked" && !sandboxQuiet.mayTell(event.session.id)) return;
      if (tasks.event(event)) host.notify(event);
    },
    sandboxAudit: (session, target, reason) =>
      audit.add(
        { route: `sandbox: refused ${target.slice(0, 200)} in session ${session.id} (${reason.slice(0, 200)})`, status: 403, machine: session.machine },
        { token: "sandbox", method: "SANDBOX" },
      ),
    queuedOf: (id) => queued.queuedOf(id),
    judge: (...request) => gate.judge(...request),
    costReported: (session, cost) => host.waitUntil(tasks.costReported(session, cost)),
  });
  const gate: PermissionGate = new PermissionGate({
    storage,
    machine: host.machine,
    sessionOf: (serverId, acpSessionId) => recorder.reads.recordOf(serverId, acpSessionId),
    answer: async (serverId, response) => {
      const sent = acpPostOutcome(await tunnel.call("acp.post", { serverId, message: JSON.stringify(response), method: null, awaitId: null }));
      if (!sent.ok) throw new Error(sent.problem.detail);
    },
    audit: (entry) => audit.add(entry),
    // A deadline passed: the request is answered as its client would, if it still waits.
    answerLate: async (session, requestId, decision, why) => {
      const pending = recorder.reads.get(session)?.pending;
      if (!pending || JSON.stringify(pending.requestId) !== JSON.stringify(requestId)) return;
      recorder.note(session, why);
      const answered =
        decision === "cancel" || pending.kind === "elicitation"
          ? await calls.answerElicitation(session, { requestId, action: "cancel" }, "policy")
          : await calls.answerPermission(session, { requestId, optionId: policyOptionOf(decision, pending.options) }, "policy");
      if (!answered.ok) throw new Error(answered.problem.detail);
    },
    wake: host.wake,
  });
  const calls = new SessionCalls(
    recorder,
    {
      call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
      online,
      record: (serverId) => {
        const frame = subscriptions.follow(serverId);
        if (frame) tunnel.send(frame);
      },
      instance: () => tunnel.instance,
      machine: host.machine,
      answeredByPolicy: (serverId, id) => gate.answeredByPolicy(serverId, id),
      keepSessionPolicy: (serverId, acpSessionId, policy) => gate.keepSessionPolicy(serverId, acpSessionId, policy),
      sseIdleCloseMs: host.sseIdleCloseMs,
      promptTimeoutMs: host.promptTimeoutMs,
      sandboxes: new ServerSandboxes({ policy: () => gate.current().config, floor: host.floor, machine: host.machine }),
    },
    queued,
  );
  const subscriptions = new RecorderSubscriptions({
    events: (serverId, events) => {
      recorder.agentEvents(serverId, events);
      host.relay.events(serverId, events);
    },
    ended: (serverId, endJson) => {
      recorder.serverEnded(serverId, endJson);
      host.relay.gone(serverId);
    },
    after: (serverId) => (recorder.firstSeqOf(serverId) ?? 1) - 1,
  });
  const tasks: TaskRunner = new TaskRunner(storage, {
    online,
    machine: host.machine,
    acpPost: (req, timeoutMs) => calls.acpPost(req, timeoutMs),
    call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
    recordOf: (serverId, acpSessionId) => recorder.reads.recordOf(serverId, acpSessionId),
    session: (id) => recorder.reads.get(id),
    announce: host.announce,
    wake: host.wake,
    waitUntil: host.waitUntil,
    startTimeoutMs: host.startTimeoutMs,
    ...(host.taskChanged ? { changed: host.taskChanged } : {}),
  });
  const feature: MachineFeature = {
    subscribers: subscriptions,
    // Followers see the machine back; prompts that waited for it go out.
    resumed: () => {
      recorder.machineChanged();
      host.waitUntil(calls.queue.drainAll());
    },
    // What the recorder holds in memory is written before the machine is away; followers see it offline now.
    gone: () => {
      recorder.flush();
      recorder.machineChanged();
    },
  };
  return { recorder, calls, gate, tasks, subscriptions, feature };
}
