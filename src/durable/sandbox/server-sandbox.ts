/**
 * The sandbox an agent server is started in (docs/architecture.md, "Sandboxes: the team's rules"): the
 * team's sandbox rules, kept by this machine's object with the permission policy, decide what is asked
 * for this agent, this machine and the origin of the work; the machine's floor, when its hello said it,
 * gives what it will enforce (the stricter of the two). The worker never makes a request looser than the
 * rules: the sidecar applies the floor again whatever the worker says.
 */
import { TeamPolicy } from "@agent-runtime/protocol/policy";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { type SandboxSpec, stricterSandbox, type WorkOrigin } from "@agent-runtime/protocol/sandbox";
import { decideSandbox, type SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import type { AgentId } from "@agent-runtime/protocol/values";

export interface ServerSandboxHost {
  /** The team's policy document as this object keeps it (read back through its schema here). */
  policy(): unknown;
  /** The owner's floor as the machine's hello said it; null: the sidecar did not say (the record then says nothing of it). */
  floor(): SandboxSpec | null;
  machine(): string;
}

export class ServerSandboxes {
  constructor(private readonly host: ServerSandboxHost) {}

  /**
   * What a new start of `agent` asks for. A stored document that does not read as a policy refuses the
   * start: asking for a default instead could be looser than what the team wrote.
   */
  decide(agent: AgentId, origin: WorkOrigin): Outcome<SessionSandbox> {
    const policy = TeamPolicy.safeParse(this.host.policy());
    if (!policy.success) {
      return {
        ok: false,
        problem: { code: "internal", detail: `the team's policy kept by machine '${this.host.machine()}' cannot be read: PUT /v1/config/policy again` },
      };
    }
    return { ok: true, value: this.withFloor({ ...decideSandbox(policy.data.sandbox, { agent, machine: this.host.machine(), origin }), effective: null }) };
  }

  /** A start again (a restore) asks for what was asked before; what the machine enforces is as its floor says now. */
  withFloor(sandbox: SessionSandbox): SessionSandbox {
    const floor = this.host.floor();
    return { ...sandbox, effective: floor ? stricterSandbox(sandbox.requested, floor) : null };
  }
}
