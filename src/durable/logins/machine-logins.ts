/**
 * Logging a machine's agents in, as its object does it (docs/architecture.md, "Logins"): the sidecar runs
 * the login (`logins.start`); a value kept logs the agent in at once, a terminal login when its process
 * exits 0 (watched by `LoginWatch`), the agent's own flow when the sidecar says it ended logged in (a
 * `login` frame, also sent when the flow asks a person to open a page: they are told), and then each
 * session that waited for the login is started. Values
 * a person types pass through here once, in the call to the sidecar, and are never kept or logged.
 */
import type { WorkerFrame } from "@agent-runtime/protocol/frames";
import type { AgentLogin, LoginAnswer, LoginRemoved, LoginRequest, LoginStarted } from "@agent-runtime/protocol/logins";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { Session } from "@agent-runtime/protocol/sessions";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { RuntimeEvent } from "../notifications/events";
import { LoginWatch } from "./login-watch";
import type { MachineFeature } from "../machine/feature";
import type { SubscriberKind } from "../streams/subscribers";

export interface LoginHost {
  call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<Outcome<OpResult<N>>>;
  send(frame: WorkerFrame): void;
  /** Start the sessions that waited for an agent's login. */
  retry(agent: AgentId): Promise<Session[]>;
  waitUntil(work: Promise<unknown>): void;
  machine(): string;
  notify(event: RuntimeEvent): void;
}

export class MachineLogins implements MachineFeature {
  readonly watch: LoginWatch;
  /** A login's terminal process is followed as any stream is, to hear it exit. */
  readonly subscribers: SubscriberKind;

  constructor(
    storage: DurableObjectStorage,
    private readonly host: LoginHost,
  ) {
    this.watch = new LoginWatch(storage, (agent, ok) => {
      if (ok) host.waitUntil(host.retry(agent));
    });
    this.subscribers = this.watch;
  }

  /** POST /v1/agents/{agent}/login: the login's start, and for a value kept, the sessions that waited, started. */
  async start(agent: AgentId, request: LoginRequest): Promise<Outcome<LoginStarted>> {
    const outcome = await this.host.call("logins.start", { agent, ...request });
    if (!outcome.ok) return outcome;
    const login = outcome.value;
    if (login.type === "terminal" && login.process) this.host.send(this.watch.watch(agent, login.process.id));
    const started = login.type === "env_var" && login.state === "logged_in" ? await this.host.retry(agent) : [];
    return { ok: true, value: { ...login, started: started.map((s) => s.id) } };
  }

  /**
   * The sidecar said an agent's own login flow changed: a page it asks a person to open is told (an
   * `agent.login` notification with the page); a flow that ended with the agent logged in starts the
   * sessions that waited.
   */
  async flowChanged(agent: AgentId): Promise<void> {
    const read = await this.host.call("logins.get", { agent, noCache: false });
    if (!read.ok) return;
    const login = read.value;
    if (login.pending) this.host.notify({ type: "agent.login", machine: this.host.machine(), agent, methods: login.methods, question: login.pending });
    else if (login.state === "logged_in") await this.host.retry(agent);
  }

  /** POST /v1/agents/{agent}/login/elicitation: the page the agent's own flow asked a person to open, answered. */
  async answer(agent: AgentId, answer: LoginAnswer): Promise<Outcome<AgentLogin>> {
    return this.host.call("logins.answer", { agent, ...answer });
  }

  async remove(agent: AgentId): Promise<Outcome<LoginRemoved>> {
    return this.host.call("logins.remove", { agent });
  }
}
