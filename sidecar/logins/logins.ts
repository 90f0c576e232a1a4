/**
 * Logging this machine's agents in (docs/architecture.md, "Logins"). Whether an agent is logged in is
 * asked of the agent once (a process of its own: `initialize`, a login the environment satisfies, then
 * `session/new`; ACP's `auth_required` says no) and kept, as versions are; what sessions meet on the way
 * (a session refused or started) keeps it true. A login by method:
 *   terminal: the agent's own command with the method's arguments, in a tty process a person drives from
 *             the dashboard's terminal or the API; its exit 0 ends the login (ACP's terminal auth);
 *   env_var:  the values are kept by `AgentValues` (0600) and given to the agent's processes;
 *   agent:    `authenticate` with the method, in a process of its own, in the background; a page it asks a
 *             person to open is kept on the agent's login (agent-flows.ts).
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import {
  type AgentLogin,
  authMethodsOf,
  AUTH_REQUIRED_CODE,
  type LoginAnswer,
  type LoginStarted,
  type LoginRemoved,
  type LoginRequest,
  type TerminalLaunch,
} from "@agent-runtime/protocol/logins";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { Enclosure } from "../sandbox/enclosure";
import { AcpServer, type AgentLaunch, type AgentLauncher, spawnAgentProcess } from "../acp/acp-server";
import { logger } from "../log";
import type { ProcessManager } from "../processes/processes";
import { AgentFlows } from "./agent-flows";
import type { AgentValues } from "./agent-values";

const log = logger("logins");

const ASK_TIMEOUT_MS = 20_000;
/** The agent's own flow may wait for a person in a browser. */
const AGENT_FLOW_TIMEOUT_MS = 15 * 60_000;

interface Known {
  login: Omit<AgentLogin, "stored">;
  terminal: Map<string, TerminalLaunch>;
}

/** The launcher with the values kept for each agent added to its environment (under what the launch sets itself). */
export function withAgentValues(launcher: AgentLauncher, values: AgentValues): AgentLauncher {
  return async (agent) => {
    const [launch, kept] = await Promise.all([launcher(agent), values.get(agent)]);
    if (Object.keys(kept).length === 0) return launch;
    return { ...launch, env: { ...kept, ...launch.env } };
  };
}

export class AgentLogins {
  private readonly known = new Map<AgentId, Known>();
  private readonly asking = new Map<AgentId, Promise<Known>>();
  /** The agents' own login flows running now, and the pages they ask a person to open. */
  readonly flows = new AgentFlows();

  constructor(
    private readonly processes: ProcessManager,
    /** The launcher that gives an agent its kept values (withAgentValues). */
    private readonly launch: AgentLauncher,
    private readonly values: AgentValues,
    private readonly dataDir: string,
    /** The owner's floor around the agent's process when it is asked whether it is logged in (null: no sandbox here). */
    private readonly enclose: ((agent: AgentId) => Promise<Enclosure>) | null = null,
  ) {}

  /** What is known without asking the agent (the agents list): `unknown` until it was asked or a session said. */
  async cached(agent: AgentId): Promise<AgentLogin> {
    const known = this.known.get(agent)?.login ?? { state: "unknown" as const, methods: [], logout: false };
    return { ...known, stored: await this.values.names(agent), pending: this.flows.question(agent) };
  }

  async get(agent: AgentId, noCache: boolean): Promise<AgentLogin> {
    const known = (!noCache && this.known.get(agent)) || (await this.ask(agent));
    return { ...known.login, stored: await this.values.names(agent), pending: this.flows.question(agent) };
  }

  /** A person answered the page the agent's own login flow asked them to open. */
  async answer(agent: AgentId, answer: LoginAnswer): Promise<AgentLogin> {
    await this.flows.answer(agent, answer);
    return this.cached(agent);
  }

  /** A session's start said whether its agent is logged in. */
  observed(agent: AgentId, loggedIn: boolean): void {
    const state = loggedIn ? "logged_in" : "needs_login";
    const known = this.known.get(agent);
    if (known) {
      known.login = { ...known.login, state };
      return;
    }
    // Not asked yet: asked now (for its methods), and what the session said kept over what the question
    // says (an agent that starts sessions and refuses the turn, as Claude Code's adapter, looks logged in to it).
    void this.ask(agent).then((asked) => {
      asked.login = { ...asked.login, state };
    });
  }

  async start(agent: AgentId, request: LoginRequest): Promise<LoginStarted> {
    const known = await this.ask(agent);
    const method = known.login.methods.find((m) => m.id === request.method);
    if (!method) {
      const offered = known.login.methods.map((m) => m.id).join(", ") || "none";
      throw new ProblemError("invalid_request", `'${agent}' offers no login method '${request.method}' (it offers: ${offered})`);
    }
    if (method.type === "env_var") {
      const vars = method.vars ?? [];
      const given = request.values ?? {};
      const missing = vars.filter((name) => !given[name]);
      if (missing.length) throw new ProblemError("invalid_request", `method '${method.id}' needs a value for ${missing.join(", ")}`);
      const extra = Object.keys(given).filter((name) => !vars.includes(name));
      if (extra.length) throw new ProblemError("invalid_request", `method '${method.id}' takes no ${extra.join(", ")} (it takes ${vars.join(", ")})`);
      await this.values.set(agent, given);
      log.info(`${agent}: values kept for '${method.id}' (${vars.join(", ")})`);
      const now = await this.ask(agent);
      return { method: method.id, type: method.type, state: now.login.state };
    }
    if (request.values) throw new ProblemError("invalid_request", `method '${method.id}' takes no values: it is a ${method.type} login`);
    if (method.type === "terminal") {
      const launch = await this.launch(agent);
      const extra = known.terminal.get(method.id) ?? { args: [], env: {} };
      const proc = await this.processes.spawn({
        command: launch.command,
        args: [...launch.args, ...extra.args],
        cwd: launch.cwd,
        env: { ...launch.env, ...extra.env },
        owner: "user",
        interactive: true,
        tty: true,
        label: `login:${agent}`,
      });
      void proc.exited.then(() => {
        // Ended well: what it logged in is asked again (and the machine's object retries the sessions that waited).
        if (proc.info.exitCode === 0) this.known.delete(agent);
        log.info(`${agent}: the terminal login exited (${proc.info.signal ?? `code ${proc.info.exitCode}`})`);
      });
      return { method: method.id, type: method.type, state: known.login.state, process: proc.info };
    }
    this.flows.begin(agent, method.id);
    // The flow may ask a person to open a page (URL elicitation): the client says it can show one.
    void this.withAgent(agent, AGENT_FLOW_TIMEOUT_MS, (server) => this.flows.run(agent, server, AGENT_FLOW_TIMEOUT_MS), { elicitation: { url: {} } })
      .then(
        () => {
          // Logged in: what it is now is asked again (and the machine's object retries the sessions that waited).
          this.known.delete(agent);
          log.info(`${agent}: logged in by its own flow '${method.id}'`);
        },
        (err: unknown) => log.warn(`${agent}: its own login '${method.id}' failed: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => this.flows.ended(agent));
    return { method: method.id, type: method.type, state: known.login.state };
  }

  /** Log out: the agent's `logout` where it has it, and the values kept for it removed. */
  async remove(agent: AgentId): Promise<LoginRemoved> {
    const known = this.known.get(agent) ?? (await this.ask(agent));
    const removed = await this.values.remove(agent);
    let loggedOut = false;
    if (known.login.logout) {
      loggedOut = await this.withAgent(agent, ASK_TIMEOUT_MS, (server) => server.request("logout", {}, ASK_TIMEOUT_MS)).then(
        () => true,
        (err: unknown) => {
          log.warn(`${agent}: logout failed: ${err instanceof Error ? err.message : String(err)}`);
          return false;
        },
      );
    }
    this.known.delete(agent);
    return { removed, loggedOut, state: (await this.ask(agent)).login.state };
  }

  /** Ask the agent (one question at a time per agent): its methods, and whether a session starts. */
  private ask(agent: AgentId): Promise<Known> {
    const running = this.asking.get(agent);
    if (running) return running;
    const run = this.askNow(agent).finally(() => this.asking.delete(agent));
    this.asking.set(agent, run);
    return run;
  }

  private async askNow(agent: AgentId): Promise<Known> {
    const folder = join(this.dataDir, "logins", "probe");
    await mkdir(folder, { recursive: true });
    const known: Known = { login: { state: "unknown", methods: [], logout: false }, terminal: new Map() };
    try {
      await this.withAgent(agent, ASK_TIMEOUT_MS, async (server, initialized) => {
        const offered = authMethodsOf(initialized);
        known.login = { state: "unknown", methods: offered.methods, logout: offered.logout };
        known.terminal = offered.terminal;
        try {
          await server.request("session/new", { cwd: folder, mcpServers: [] }, ASK_TIMEOUT_MS);
          known.login.state = "logged_in";
        } catch (err) {
          if (err instanceof ProblemError && err.extensions?.agentErrorCode === AUTH_REQUIRED_CODE) known.login.state = "needs_login";
          else throw err;
        }
      });
    } catch (err) {
      log.warn(`${agent}: could not ask whether it is logged in: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.known.set(agent, known);
    return known;
  }

  /** A process of the agent's own for one question: started, initialized (logged in as the environment allows), then stopped. */
  private async withAgent<T>(
    agent: AgentId,
    timeoutMs: number,
    fn: (server: AcpServer, initialized: unknown) => Promise<T>,
    capabilities: Record<string, unknown> = {},
  ): Promise<T> {
    const launch: AgentLaunch = await this.launch(agent);
    // Asked by no team: the owner's floor alone applies, as to any other process of the agent.
    const enclosure = this.enclose ? await this.enclose(agent) : null;
    const proc = await spawnAgentProcess(this.processes, enclosure ? await enclosure.wrap(agent, launch) : launch, `login:${agent}`).catch(
      async (err: unknown) => {
        await enclosure?.dispose();
        throw err;
      },
    );
    void proc.exited.then(() => enclosure?.dispose());
    const server = new AcpServer(
      `login-${agent}-${Date.now().toString(36)}`,
      agent,
      proc,
      { maxEvents: 100, maxBytes: 1024 * 1024 },
      1,
      enclosure,
      launch.env ?? {},
    );
    try {
      const initialized = await server.request(
        "initialize",
        { protocolVersion: 1, clientCapabilities: { auth: { terminal: true }, ...capabilities }, clientInfo: { name: "agent-runtime", version: "1" } },
        Math.min(timeoutMs, ASK_TIMEOUT_MS),
      );
      await server.logInFromEnv(initialized);
      return await fn(server, initialized);
    } finally {
      await proc.terminate();
    }
  }
}
