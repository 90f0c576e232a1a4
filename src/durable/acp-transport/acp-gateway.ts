/**
 * Every way into an ACP server through the machine's object (docs/architecture.md, "ACP's remote
 * transport"): the relay's `/v1/acp/{server_id}` and the transport's `/acp` (HTTP and WebSocket), each
 * checked against the one rule of ownership (`ownership.ts`) before anything reaches the machine. The
 * machine's object hands each RPC here in one line.
 */
import type { MachineFeature, SocketKind } from "../machine/feature";
import type { ObjectRequest } from "../machine/object-requests";
import type { AcpServerList, JsonRpcMessage } from "@agent-runtime/protocol/acp";
import type { StreamRef } from "@agent-runtime/protocol/frames";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { AgentId } from "@agent-runtime/protocol/values";
import { problemResponse } from "../../lib/problem-response";
import { offline } from "../machine/tunnel";
import type { AcpPostRequest } from "../sessions/session-calls";
import { closeTextOf, type StreamHolder, type StreamHolders } from "../streams/stream-holders";
import { ACP_SOCKET_TAG, AcpConnections, type AcpRelay, acpSocketOf } from "./connection-registry";
import { Caller, ownerKey, readCaller, refusedConnection, visibleServers } from "./ownership";

export interface GatewayHost {
  /** The relay of one client message (sessions recorded, a lost agent restored). */
  post(req: AcpPostRequest, timeoutMs: number): Promise<Outcome<AcpPostResult>>;
  call<N extends "acp.delete" | "acp.list">(op: N, args: OpArgs<N>): Promise<Outcome<OpResult<N>>>;
  reachable(): boolean;
  accept(ws: WebSocket, tags: string[]): void;
  /** How long an initialize may take (ACP_TIMEOUT_MS). */
  acpTimeoutMs: number;
}

export class AcpGateway implements MachineFeature {
  /** ACP's WebSocket form: one socket is one connection, its state in its attachment. */
  readonly sockets: SocketKind = {
    tag: ACP_SOCKET_TAG,
    message: (ws, message) => {
      const acp = acpSocketOf(ws);
      return acp ? this.connections.socketMessage(ws, acp, message, this.host.acpTimeoutMs) : undefined;
    },
    closed: (ws) => {
      const acp = acpSocketOf(ws);
      return acp ? this.connections.socketClosed(acp) : undefined;
    },
    end: (ws, problem) => {
      const acp = acpSocketOf(ws);
      if (acp) this.connections.endSocket(ws, acp, closeTextOf(problem));
    },
  };

  constructor(
    private readonly connections: AcpConnections,
    private readonly holders: StreamHolders,
    private readonly host: GatewayHost,
  ) {}

  /** `POST /v1/acp/{server_id}`: a connection's server only for its opener. */
  async post(req: AcpPostRequest, timeoutMs: number, caller: Caller): Promise<Outcome<AcpPostResult>> {
    const refused = refusedConnection(this.connections, req.serverId, readCaller(caller), "use");
    return refused ? { ok: false, problem: refused } : this.host.post(req, timeoutMs);
  }

  /** Why `caller` may not open this stream (null: it may; a process's logs are not an ACP server's). */
  refusedStream(stream: StreamRef, caller: Caller) {
    return stream.kind === "acp" ? refusedConnection(this.connections, stream.serverId, caller, "use") : null;
  }

  /** `DELETE /v1/acp/{server_id}`: a connection's server is stopped by its opener (or an admin) only. */
  async stop(serverId: string, caller: Caller): Promise<Outcome<void>> {
    const refused = refusedConnection(this.connections, serverId, Caller.parse(caller), "stop");
    if (refused) return { ok: false, problem: refused };
    const stopped = await this.host.call("acp.delete", { serverId });
    return stopped.ok ? { ok: true, value: undefined } : stopped;
  }

  /** `GET /v1/acp`: another token's connections are left out (an admin sees them, marked with their opener). */
  async list(asker: Caller): Promise<Outcome<AcpServerList>> {
    const caller = Caller.parse(asker);
    const listed = await this.host.call("acp.list", {});
    return listed.ok ? { ok: true, value: { servers: visibleServers(listed.value.servers, this.connections, caller) } } : listed;
  }

  /** `initialize` without a connection id: the agent starts, and the connection is its server. */
  connect(agent: AgentId, message: JsonRpcMessage, caller: Caller): Promise<Outcome<{ connectionId: string; body: string }>> {
    const who = Caller.parse(caller);
    return this.connections.connect(agent, message, ownerKey(who), who.name, this.host.acpTimeoutMs);
  }

  connectionPost(connectionId: string, session: string | null, message: JsonRpcMessage, caller: Caller): Outcome<void> {
    const who = Caller.parse(caller);
    return this.connections.post(connectionId, session, message, ownerKey(who), who.name);
  }

  connectionStream(connectionId: string, session: string | null, caller: Caller): Response {
    const who = Caller.parse(caller);
    return this.connections.stream(connectionId, session, ownerKey(who), (body) => this.holders.holdBody(who, body));
  }

  connectionClose(connectionId: string, caller: Caller): Promise<Outcome<void>> {
    return this.connections.close(connectionId, ownerKey(Caller.parse(caller)));
  }

  /** The sidecar restarted: every agent is gone, and every connection with it. */
  restarted(): void {
    this.connections.allAgentsGone();
  }

  fetch(request: Request, asked: ObjectRequest): Response | null {
    return asked.kind === "acp-socket" ? this.acceptSocket(request, asked.agent, asked.holder) : null;
  }

  /** The WebSocket form: one socket is one connection (and one agent process), hibernatable, held by its opener. */
  acceptSocket(request: Request, agent: AgentId | null, holder: StreamHolder | null): Response {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !agent || !holder) {
      return problemResponse({ code: "invalid_request", detail: "expected a WebSocket upgrade naming its agent and its holder" });
    }
    if (!this.host.reachable()) return problemResponse(offline());
    const { serverId, tags, attachment } = this.connections.socketSetup(agent, holder.name, ownerKey(holder));
    const { 0: client, 1: server } = new WebSocketPair();
    this.host.accept(server, [...tags, ...this.holders.socketTags(holder)]);
    server.serializeAttachment(attachment);
    return new Response(null, { status: 101, webSocket: client, headers: { "acp-connection-id": serverId } });
  }
}

/**
 * The transport's connections and the gateway over them, as a machine's object wires them: one relay for
 * both (the gateway's own messages never ask for a restore of another server's agent).
 */
export function acpTransport(relay: AcpRelay, host: Omit<GatewayHost, "post">, holders: StreamHolders): { connections: AcpConnections; gateway: AcpGateway } {
  const connections = new AcpConnections(relay);
  return { connections, gateway: new AcpGateway(connections, holders, { ...host, post: (req, timeoutMs) => relay.post(req, timeoutMs, false) }) };
}
