/**
 * A sandbox's writable folders are fixed when its agent starts, but an agent starts (on `initialize`)
 * before any session names its folder. Under `workspace`, a session start for a folder the sandbox does
 * not yet let the agent write starts the agent again in a sandbox that does (docs/architecture.md,
 * "Sandboxes"): the new process is told what the client told the first (`initialize`, the login) and its
 * sessions are reattached, then it takes the first one's place behind the same server and stream.
 */
import { agentCapabilitiesOf } from "@agent-runtime/protocol/acp-meaning";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { z } from "zod";
import { logger } from "../log";
import type { ManagedProcess } from "../processes/processes";
import type { AcpServer } from "./acp-server";

const log = logger("acp");

const SessionParams = z.object({ sessionId: z.string().optional(), cwd: z.string(), mcpServers: z.array(z.record(z.string(), z.unknown())) }).passthrough();
const ClientMessage = z.object({ method: z.string(), params: z.unknown() }).passthrough();
const NewSessionAnswer = z.object({ result: z.object({ sessionId: z.string() }).passthrough() }).passthrough();

function parse(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

/** The methods whose messages `remember` reads: any other message (a prompt, an answer) is not parsed again. */
const REMEMBERED = new Set(["initialize", "authenticate", "session/new", "session/load", "session/resume", "session/close"]);

/**
 * Keep what a process started anew must be told: the client's `initialize`, its login, its sessions and their
 * folders. `told` is the message's method as the worker read it (`acp.post`'s `method`): a message of another
 * method is let be unparsed; one of these is read from its own text.
 */
export function remember(server: Pick<AcpServer, "setup">, told: string | null, message: string, answerBody: string | undefined): void {
  if (told === null || !REMEMBERED.has(told)) return;
  const sent = ClientMessage.safeParse(parse(message));
  if (!sent.success) return;
  const { method, params } = sent.data;
  if (method === "initialize") server.setup.initialize = params;
  else if (method === "authenticate") {
    const id = z.object({ methodId: z.string() }).safeParse(params);
    if (id.success) server.setup.authMethodId = id.data.methodId;
  } else if (method === "session/new" || method === "session/load" || method === "session/resume") {
    const session = SessionParams.safeParse(params);
    if (!session.success) return;
    const answered = method === "session/new" ? NewSessionAnswer.safeParse(parse(answerBody ?? "")) : null;
    const sessionId = answered?.success ? answered.data.result.sessionId : session.data.sessionId;
    if (sessionId) server.setup.sessions.set(sessionId, { cwd: session.data.cwd, mcpServers: session.data.mcpServers });
  } else if (method === "session/close") {
    const id = z.object({ sessionId: z.string() }).safeParse(params);
    if (id.success) server.setup.sessions.delete(id.data.sessionId);
  }
}

/**
 * Start `server`'s agent again with `folder` writable too, as `spawn` does it, and swap it in. Refused
 * while a turn runs (it would be cut) and when the agent has sessions it can neither resume nor load.
 */
export async function widenSandbox(server: AcpServer, folder: string, spawn: () => Promise<ManagedProcess>): Promise<void> {
  const enclosure = server.enclosure;
  if (!enclosure) return;
  if (server.busy) {
    throw new ProblemError(
      "conflict",
      `server '${server.serverId}' is in a turn; a session in '${folder}' needs its agent started again with that folder writable: try when the turn ended, or use another server`,
    );
  }
  enclosure.addFolder(folder);
  const started = Date.now();
  const proc = await spawn();
  const earlier = server.replaceProcess(proc);
  await earlier.terminate();
  if (server.setup.initialize === null) return;
  const initialized = await server.request("initialize", server.setup.initialize);
  await server.logInFromEnv(initialized);
  if (server.setup.authMethodId) await server.request("authenticate", { methodId: server.setup.authMethodId });
  const can = agentCapabilitiesOf(initialized);
  for (const [sessionId, session] of server.setup.sessions) {
    const reattached = await server.reattach({ sessionId, ...session }, can);
    if (reattached.how === "none") {
      log.warn(`${server.serverId}: session ${sessionId} was not reattached after widening the sandbox: ${reattached.error ?? "refused"}`);
      server.setup.sessions.delete(sessionId);
    }
  }
  log.info(`${server.serverId}: agent '${server.agent}' started again with '${folder}' writable (${Date.now() - started} ms)`);
}
