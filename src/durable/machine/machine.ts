/**
 * One Durable Object per machine (docs/architecture.md, "The machine object"): the RPC surface the
 * worker's routes call, one line a method (the work is in each feature's class, wired in machine-core.ts).
 */
import type { StreamRef } from "@agent-runtime/protocol/frames";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { type AcpServerList, type JsonRpcMessage, readJsonRpcMessage } from "@agent-runtime/protocol/acp";
import type { AgentId } from "@agent-runtime/protocol/values";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { DeliveryAttempt, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import type {
  DiscoveredSession,
  ElicitationAnswer,
  PermissionAnswer,
  PromptEntry,
  Session,
  SessionFilter,
  TranscriptPage,
} from "@agent-runtime/protocol/sessions";
import type { AgentLogin, LoginAnswer, LoginRemoved, LoginRequest, LoginStarted } from "@agent-runtime/protocol/logins";
import type { UsageRow } from "@agent-runtime/protocol/usage";
import { type Task, TaskCall, type TaskPage } from "@agent-runtime/protocol/tasks";
import { MachineAttemptCall, type MachineAttemptAnswer } from "@agent-runtime/protocol/attempts";
import { problemResponse } from "../../lib/problem-response";
import type { TeamDocuments } from "../config/team-documents";
import type { UploadBody } from "../files/file-transfer";
import type { AcpPostText } from "../sessions/session-calls";
import { StreamHolder } from "../streams/stream-holders";
import { Caller } from "../acp-transport/ownership";
import { MachineObjectCore } from "./machine-core";

export type CallOutcome<T> = Outcome<T>;

export class MachineObject extends MachineObjectCore {
  // ---------------- RPC surface used by the worker's routes (one line each: the work is in the feature's class) ----------------

  isOnline(): boolean {
    return this.tunnel.live() !== null;
  }

  /** Call an operation on the sidecar and wait for its answer (or a problem: offline, timeout); `timeoutMs` defaults to the operation's deadline. */
  async call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<CallOutcome<OpResult<N>>> {
    return this.tunnel.call(op, args, timeoutMs);
  }

  /** An SSE reader of one of the machine's streams from sequence `after` on (or a problem response), held by `caller`. */
  async openStream(stream: StreamRef, after: number, caller: Caller): Promise<Response> {
    const who = Caller.parse(caller);
    const refused = this.parts.acp.gateway.refusedStream(stream, who);
    return refused ? problemResponse(refused) : this.parts.readers.open(stream, after, (body) => this.parts.holders.holdBody(who, body));
  }

  /** A token was revoked: every stream it holds here (SSE, terminals, ACP sockets) ends now, saying why. */
  endStreamsOf(tokenId: string, name: string): number {
    this.parts.revocations.revoke(tokenId); // and a message relayed with it is refused from now on
    return this.parts.holders.endHeldBy(tokenId, name) + this.parts.previews.access.revokeHeldBy(tokenId);
  }

  mintPreview(port: number, holder: StreamHolder, kind: "grant" | "pass"): { secret: string; expiresAtMs: number } {
    return this.parts.previews.mint(port, StreamHolder.parse(holder), kind);
  }

  redeemPreviewGrant(grant: string): { secret: string; port: number; expiresAtMs: number } | null {
    return this.parts.previews.redeem(grant);
  }

  /** A file on the machine as a streamed response (or a problem response), read in pieces. */
  async readFile(path: string): Promise<Response> {
    return this.parts.files.read(path);
  }

  /** A request body written over `path` in one rename once staged. */
  async writeFile(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.commit">>> {
    return this.parts.files.write(path, body, declaredBytes);
  }

  /** A tar archive unpacked into the folder `path` once staged. */
  async unpackArchive(path: string, body: UploadBody, declaredBytes: number | null): Promise<CallOutcome<OpResult<"fs.unpack">>> {
    return this.parts.files.unpack(path, body, declaredBytes);
  }

  /** The team's fan-out hands each machine the documents; the apply runs after this call has returned. */
  scheduleConfigApply(documents: TeamDocuments): void {
    this.ctx.waitUntil(this.parts.team.applyDocuments(documents));
  }

  async tokenGeneration(): Promise<number> {
    return this.parts.tokens.current();
  }

  async revokeTokens(): Promise<number> {
    return this.parts.tokens.revoke();
  }

  async setSubscriptions(subscriptions: SubscriptionTarget[]): Promise<void> {
    await this.parts.notifications.keep(subscriptions);
  }

  listDeliveries(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.parts.notifications.list(subscriptions, limit);
  }

  /**
   * A message to an ACP server, as the relay's route hands it over: the body's text, read and checked here,
   * once (a 400 problem for what is no JSON-RPC message). Its token's revocation is answered for here
   * first (the worker may not have asked: tokens/revocation-watch.ts).
   */
  async acpPost(req: AcpPostText, timeoutMs: number, caller: Caller): Promise<CallOutcome<AcpPostResult>> {
    const revoked = await this.parts.revocations.refusal(caller);
    if (revoked) return { ok: false, problem: revoked };
    const read = readJsonRpcMessage(req.text);
    if (!read.ok) return read;
    const { message } = read;
    const { serverId, agent, who } = req;
    return this.parts.acp.gateway.post({ serverId, ...(agent ? { agent } : {}), message, who }, timeoutMs, caller);
  }

  async acpStop(serverId: string, caller: Caller): Promise<CallOutcome<void>> {
    return this.parts.acp.gateway.stop(serverId, caller);
  }

  async acpList(caller: Caller): Promise<CallOutcome<AcpServerList>> {
    return this.parts.acp.gateway.list(caller);
  }

  async acpConnect(agent: AgentId, message: JsonRpcMessage, caller: Caller): Promise<CallOutcome<{ connectionId: string; body: string }>> {
    return this.parts.acp.gateway.connect(agent, message, caller);
  }

  acpConnectionPost(connectionId: string, session: string | null, message: JsonRpcMessage, caller: Caller): CallOutcome<void> {
    return this.parts.acp.gateway.connectionPost(connectionId, session, message, caller);
  }

  acpConnectionStream(connectionId: string, session: string | null, caller: Caller): Response {
    return this.parts.acp.gateway.connectionStream(connectionId, session, caller);
  }

  async acpConnectionClose(connectionId: string, caller: Caller): Promise<CallOutcome<void>> {
    return this.parts.acp.gateway.connectionClose(connectionId, caller);
  }

  listSessions(filter: SessionFilter, cursor: { atMs: number; id: string } | null, limit: number): { sessions: Session[]; more: boolean } {
    return this.parts.sessions.calls.list(filter, cursor, limit);
  }

  getSession(id: string): Session | null {
    return this.parts.sessions.calls.get(id);
  }

  readTranscript(id: string, after: number, limit: number): TranscriptPage | null {
    return this.parts.sessions.calls.transcript(id, after, limit);
  }

  followTranscript(id: string, after: number, holder: StreamHolder): Response {
    const who = StreamHolder.parse(holder);
    return this.parts.sessions.calls.followTranscript(id, after, (body) => this.parts.holders.holdBody(who, body));
  }

  watchSessions(holder: StreamHolder): Response {
    return this.parts.sessions.calls.watch((body) => this.parts.holders.holdBody(StreamHolder.parse(holder), body));
  }

  async closeSession(id: string, purge: boolean, who: string): Promise<CallOutcome<Session>> {
    return this.parts.sessions.calls.close(id, purge, who);
  }

  async continueSession(id: string, who: string, timeoutMs: number): Promise<CallOutcome<Session>> {
    return this.parts.sessions.calls.continue(id, who, timeoutMs);
  }

  async queuePrompt(id: string, prompt: unknown[], who: string): Promise<CallOutcome<PromptEntry>> {
    return this.parts.sessions.calls.queue.submit(id, prompt, who);
  }

  async cancelQueuedPrompt(id: string, entry: string): Promise<CallOutcome<PromptEntry>> {
    return this.parts.sessions.calls.queue.cancel(id, entry);
  }

  async answerPermission(id: string, answer: PermissionAnswer, who: string): Promise<CallOutcome<Session>> {
    return this.parts.sessions.calls.answerPermission(id, answer, who);
  }

  async answerElicitation(id: string, answer: ElicitationAnswer, who: string): Promise<CallOutcome<Session>> {
    return this.parts.sessions.calls.answerElicitation(id, answer, who);
  }

  async agentLogin(agent: AgentId, request: LoginRequest): Promise<CallOutcome<LoginStarted>> {
    return this.parts.logins.start(agent, request);
  }

  async agentLoginAnswer(agent: AgentId, answer: LoginAnswer): Promise<CallOutcome<AgentLogin>> {
    return this.parts.logins.answer(agent, answer);
  }

  async agentLogout(agent: AgentId): Promise<CallOutcome<LoginRemoved>> {
    return this.parts.logins.remove(agent);
  }

  /** Each session's usage by day within [fromDay, toDay] (GET /v1/usage sums them). */
  usageRows(fromDay: string, toDay: string, createdBy: string | null): UsageRow[] {
    return this.parts.sessions.calls.usage(fromDay, toDay, createdBy);
  }

  /** A route's call on this machine's tasks (`TaskCall`: submit, get, list, cancel), parsed here. */
  async taskCall(call: TaskCall): Promise<CallOutcome<Task | TaskPage>> {
    return this.parts.sessions.tasks.handle(TaskCall.parse(call));
  }

  /** The team's call on this machine's attempts of a group (`MachineAttemptCall`), parsed here. */
  async attemptCall(call: MachineAttemptCall): Promise<CallOutcome<MachineAttemptAnswer>> {
    return this.parts.attempts.handle(MachineAttemptCall.parse(call));
  }

  async discoverSessions(agents: AgentId[], cwd: string | undefined): Promise<CallOutcome<DiscoveredSession[]>> {
    return this.parts.sessions.calls.discover(agents, cwd);
  }
}
