/**
 * The agents' own login flows running on this machine (docs/architecture.md, "Logins"): `authenticate`
 * with an `agent` method, in a process of the agent's own. There is no session yet, so a page the flow asks
 * a person to open (ACP's `elicitation/create` in URL mode, scoped to the `authenticate` request) is kept
 * here, on the agent's login, until a person answers it (POST /v1/agents/{agent}/login/elicitation); the
 * worker is told when one is asked and when the flow ends (`onChange`), and reads the login again.
 */
import { jsonAs } from "@agent-runtime/protocol/json";
import type { LoginAnswer, LoginQuestion } from "@agent-runtime/protocol/logins";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { AgentId } from "@agent-runtime/protocol/values";
import { z } from "zod";
import type { AcpServer } from "../acp/acp-server";
import { logger } from "../log";

const log = logger("logins");

const ElicitRequest = z.object({
  id: z.union([z.string(), z.number()]),
  method: z.literal("elicitation/create"),
  params: z
    .object({ mode: z.string(), message: z.string().max(2000), url: z.string().max(8192).optional(), elicitationId: z.string().max(256).optional() })
    .passthrough(),
});

interface Flow {
  method: string;
  server: AcpServer | null;
  question: LoginQuestion | null;
}

export class AgentFlows {
  private readonly flows = new Map<AgentId, Flow>();
  /** A flow asked a person something, or ended (set by the sidecar: the worker is told). */
  onChange: (agent: AgentId) => void = () => {};

  /** The page the agent's running flow waits on, if any. */
  question(agent: AgentId): LoginQuestion | null {
    return this.flows.get(agent)?.question ?? null;
  }

  /** A flow of this agent starts (one at a time per agent). */
  begin(agent: AgentId, method: string): void {
    const running = this.flows.get(agent);
    if (running) throw new ProblemError("conflict", `'${agent}' is already being logged in by its own flow ('${running.method}'): answer or wait for it`);
    this.flows.set(agent, { method, server: null, question: null });
  }

  /** Run `authenticate` on the flow's process until the agent answers; what it asks a person meanwhile is kept. */
  async run(agent: AgentId, server: AcpServer, timeoutMs: number): Promise<void> {
    const flow = this.flows.get(agent);
    if (!flow) throw new Error(`no login flow of '${agent}' was begun`);
    flow.server = server;
    let seen = server.log.lastSeq;
    const stop = server.log.onChange(() => {
      for (const [seq, json] of server.log.since(seen).events) {
        seen = seq;
        this.read(agent, flow, json);
      }
    }, false);
    try {
      await server.request("authenticate", { methodId: flow.method }, timeoutMs);
    } finally {
      stop();
    }
  }

  /** The flow ended (well or not): the worker is told, and reads the agent's login again. */
  ended(agent: AgentId): void {
    if (this.flows.delete(agent)) this.onChange(agent);
  }

  /** A person answered the page the flow asked them to open. */
  async answer(agent: AgentId, answer: LoginAnswer): Promise<void> {
    const flow = this.flows.get(agent);
    const question = flow?.question;
    if (!flow?.server || !question || (answer.requestId !== undefined && JSON.stringify(answer.requestId) !== JSON.stringify(question.requestId))) {
      throw new ProblemError("conflict", `no login flow of '${agent}' waits for that answer (answered, ended, or never asked)`);
    }
    flow.question = null;
    await flow.server.post(JSON.stringify({ jsonrpc: "2.0", id: question.requestId, result: { action: answer.action } }), null);
    log.info(`${agent}: its login flow's page was answered: ${answer.action}`);
  }

  private read(agent: AgentId, flow: Flow, json: string): void {
    const request = jsonAs(json, ElicitRequest);
    if (!request) return;
    const { id, params } = request;
    // Only a web page is shown to a person for a login (a form's values would pass through the worker), and
    // only an http(s) one: anything else is declined at once, and the agent says what that means to it.
    if (params.mode === "url" && params.url && params.elicitationId && /^https?:\/\//i.test(params.url)) {
      flow.question = { requestId: id, method: flow.method, atMs: Date.now(), message: params.message, url: params.url, elicitationId: params.elicitationId };
      log.info(`${agent}: its login flow asks a person to open ${params.url}`);
      this.onChange(agent);
      return;
    }
    log.warn(`${agent}: its login flow asked a ${params.mode} question this runtime does not show for a login: declined`);
    void flow.server
      ?.post(JSON.stringify({ jsonrpc: "2.0", id, result: { action: "decline" } }), null)
      .catch((err: unknown) => log.warn(`${agent}: the decline did not reach it: ${err instanceof Error ? err.message : String(err)}`));
  }
}
