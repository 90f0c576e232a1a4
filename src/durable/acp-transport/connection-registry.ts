/**
 * ACP's remote transport inside the machine's object (docs/architecture.md, "ACP's remote transport").
 * A connection is one ACP server (one agent process) whose id is the `Acp-Connection-Id`; the client's
 * messages go through the same relay as `POST /v1/acp/{server_id}` (so sessions are recorded and an agent
 * that was lost is started again), but a POST is answered once its message is sent (202) and the answer
 * comes on a stream: over HTTP the connection's or the session's SSE stream, over a WebSocket the socket.
 * What the agent writes reaches the connections through the session recorder's subscription: one
 * subscription per server, whoever reads it.
 */
import { closeReason } from "../../lib/close-reason";
import { z } from "zod";
import { problemResponse } from "../../lib/problem-response";
import { problemBody, type ProblemInit } from "@agent-runtime/protocol/problems";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { isJsonRpcRequest, JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { AgentId } from "@agent-runtime/protocol/values";
import { AcpConnection, type Route } from "./connection";
import { Mailbox } from "./mailbox";
import { AnswerOrder } from "./answer-order";
import type { AcpPostOutcome } from "../sessions/acp-post-outcome";
import type { SseBody } from "../streams/sse-body";

/** What the machine's object does for the transport: its relay, and stopping a server. */
export interface AcpRelay {
  /** `restore`: an agent that is gone is started again (as its client initialized it) before the message. */
  post(req: { serverId: string; agent?: AgentId; message: JsonRpcMessage; who: string }, timeoutMs: number, restore: boolean): Promise<AcpPostOutcome>;
  stop(serverId: string): Promise<void>;
  /** The hibernatable sockets with a tag. */
  sockets(tag: string): WebSocket[];
  /** An event no client sees: a permission request the team's policy answers (policy/permission-gate.ts). */
  hides(serverId: string, seq: number, text: string): boolean;
}

/** A client may take this long over one request (a turn); its own `session/cancel` or `$/cancel_request` ends one sooner. */
export const ACP_CONNECTION_REQUEST_TIMEOUT_MS = 60 * 60_000;
/** Bytes a connection holds for a client that does not read; past this the connection is closed (as the SDK's server does). */
export const MAX_CONNECTION_BUFFERED_BYTES = 16 * 1024 * 1024;

export const ACP_SOCKET_TAG = "acp";
/** The path of the machine object's fetch that accepts an ACP WebSocket (`GET /acp` with an upgrade). */
const socketTag = (serverId: string) => `acp:${serverId}`;

/** What a WebSocket connection keeps across hibernation: everything it needs, no routing state. */
const SocketAttachment = z.object({
  kind: z.literal("acp"),
  serverId: z.string(),
  agent: AgentId,
  who: z.string(),
  /** Who may use the connection's server through any route (an attachment from before owners were kept: nobody). */
  owner: z.string().default(""),
  initialized: z.boolean(),
  lastSeq: z.number(),
});
type SocketAttachment = z.infer<typeof SocketAttachment>;

export function acpSocketOf(ws: WebSocket): SocketAttachment | null {
  const parsed = SocketAttachment.safeParse(ws.deserializeAttachment());
  return parsed.success ? parsed.data : null;
}

interface Live {
  connection: AcpConnection;
  /** The name of the token that opened it (what an admin's list shows). */
  who: string;
  /** "" is the connection's own stream, other keys are sessions. */
  streams: Map<string, Mailbox>;
  bufferedBytes: number;
}

/** A JSON-RPC error answer for a request the runtime could not get answered (the problem in `data`). */
function errorAnswer(id: unknown, problem: ProblemInit): string {
  return JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message: problem.detail, data: problemBody(problem) } });
}

const CONNECTION_PREFIX = "acpc-";

export function newConnectionId(): string {
  return `${CONNECTION_PREFIX}${crypto.randomUUID()}`;
}

/** Is this ACP server id a connection of the remote transport (which only its opener may use)? */
export function isConnectionId(serverId: string): boolean {
  return serverId.startsWith(CONNECTION_PREFIX);
}

export class AcpConnections {
  private readonly live = new Map<string, Live>();
  /** Answers wait for what the agent wrote before them. */
  private readonly order = new AnswerOrder();

  constructor(private readonly relay: AcpRelay) {}

  // ---------------- HTTP ----------------

  /** `initialize` without a connection: start the agent, and the connection with it. */
  async connect(
    agent: AgentId,
    message: JsonRpcMessage,
    owner: string,
    who: string,
    timeoutMs: number,
  ): Promise<Outcome<{ connectionId: string; body: string }>> {
    const serverId = newConnectionId();
    const outcome = await this.relay.post({ serverId, agent, message, who }, timeoutMs, false);
    if (!outcome.ok) return outcome;
    if (outcome.value.status !== 200) return { ok: false, problem: { code: "invalid_request", detail: "initialize must be a request (it needs an id)" } };
    this.live.set(serverId, { connection: new AcpConnection(serverId, owner), who, streams: new Map(), bufferedBytes: 0 });
    return { ok: true, value: { connectionId: serverId, body: outcome.value.body } };
  }

  /** A client message on a connection: 202 once it is on its way (its answer comes on a stream), else why not. */
  post(connectionId: string, headerSession: string | null, message: JsonRpcMessage, owner: string, who: string): Outcome<void> {
    const live = this.owned(connectionId, owner);
    if (!live) return { ok: false, problem: unknownConnection() };
    const verdict = live.connection.accept(message, headerSession);
    if (!verdict.ok) return { ok: false, problem: { code: verdict.status === 409 ? "conflict" : "invalid_request", detail: verdict.detail } };
    // Not awaited: the frame leaves for the machine before this returns (so messages keep their order), and
    // the answer is routed when it comes. The client's open stream keeps this object alive meanwhile.
    this.forward(live, message, who).catch((err: unknown) => console.error(`acp connection ${connectionId}: forwarding failed:`, err));
    return { ok: true, value: undefined };
  }

  private async forward(live: Live, message: JsonRpcMessage, who: string): Promise<void> {
    const { connection } = live;
    const outcome = await this.relay.post({ serverId: connection.id, message, who }, ACP_CONNECTION_REQUEST_TIMEOUT_MS, true);
    if (outcome.ok && connection.agentLost) connection.restored();
    if (!isJsonRpcRequest(message)) {
      if (!outcome.ok) console.warn(`acp connection ${connection.id}: a ${message.method ?? "response"} was not delivered: ${outcome.problem.detail}`);
      return;
    }
    if (outcome.ok && outcome.value.status === 200) {
      const body = outcome.value.body;
      await this.order.after(connection.id, outcome.value.afterSeq);
      const answer = parseAnswer(body);
      this.push(live, connection.answered(message.id, answer.ok, answer.result), body);
    } else {
      const problem = outcome.ok ? { code: "internal" as const, detail: "the agent's answer did not come back" } : outcome.problem;
      this.push(live, connection.answered(message.id, false, undefined), errorAnswer(message.id, problem));
    }
  }

  /** The SSE stream of a connection (session null) or of one of its sessions; `hold` keeps its body with its holder. */
  stream(connectionId: string, session: string | null, owner: string, hold: (body: SseBody) => void): Response {
    const live = this.owned(connectionId, owner);
    if (!live) return problemResponse(unknownConnection());
    const key = session ?? "";
    const mailbox = this.mailbox(live, key);
    return mailbox.open(hold, () => {
      // A session's stream nobody reads and nothing waits on is dropped; it is made again when needed.
      if (key !== "" && !mailbox.hasReceiver && mailbox.isEmpty && live.streams.get(key) === mailbox) live.streams.delete(key);
    });
  }

  /** DELETE: the connection ends and its agent stops (its sessions stay recorded, reattachable elsewhere). */
  async close(connectionId: string, owner: string): Promise<Outcome<void>> {
    const live = this.owned(connectionId, owner);
    if (!live) return { ok: false, problem: unknownConnection() };
    this.drop(connectionId);
    await this.relay.stop(connectionId);
    return { ok: true, value: undefined };
  }

  private drop(connectionId: string, error?: { detail: string }): void {
    this.order.forget(connectionId);
    const live = this.live.get(connectionId);
    if (!live) return;
    this.live.delete(connectionId);
    for (const mailbox of live.streams.values()) mailbox.end(error);
  }

  /**
   * The one rule of ownership (docs/architecture.md, "ACP's remote transport"): a connection's server is
   * its opener's, whichever route names it (`/acp`, or `/v1/acp/{server_id}` with its id). Who opened it,
   * or null when it is no connection; "" when it is one this object knows no opener of (it lost its memory
   * since): nobody's.
   */
  ownerOf(serverId: string): string | null {
    if (!isConnectionId(serverId)) return null;
    const live = this.live.get(serverId);
    if (live) return live.connection.owner;
    const ws = this.relay.sockets(socketTag(serverId))[0];
    return (ws && acpSocketOf(ws)?.owner) || "";
  }

  /** Who opened a connection, by name, for an admin's list; null for a server that is no connection. */
  openerOf(serverId: string): string | null {
    if (!isConnectionId(serverId)) return null;
    const live = this.live.get(serverId);
    if (live) return live.who;
    const ws = this.relay.sockets(socketTag(serverId))[0];
    return (ws && acpSocketOf(ws)?.who) || "(unknown)";
  }

  private owned(connectionId: string, owner: string): Live | null {
    const live = this.live.get(connectionId);
    // Another token's connection is as unknown to this caller as one that never was.
    return live && live.connection.owner === owner ? live : null;
  }

  private mailbox(live: Live, key: string): Mailbox {
    let mailbox = live.streams.get(key);
    if (!mailbox) {
      mailbox = new Mailbox((delta) => {
        live.bufferedBytes += delta;
      });
      live.streams.set(key, mailbox);
    }
    return mailbox;
  }

  private push(live: Live, route: Route, json: string): void {
    if (!this.live.has(live.connection.id)) return;
    this.mailbox(live, route ?? "").push(json);
    if (live.bufferedBytes > MAX_CONNECTION_BUFFERED_BYTES) {
      console.warn(`acp connection ${live.connection.id}: its client read none of ${live.bufferedBytes} bytes; closed`);
      this.drop(live.connection.id, {
        detail: `the client did not read its streams (more than ${MAX_CONNECTION_BUFFERED_BYTES} bytes waiting): connection closed`,
      });
      void this.relay.stop(live.connection.id);
    }
  }

  // ---------------- what the agent writes ----------------

  /** A batch of the agent's stream, as the recorder's subscription delivered it. */
  agentEvents(serverId: string, events: [number, string][]): void {
    this.order.routed(serverId, events);
    const live = this.live.get(serverId);
    const sockets = this.relay.sockets(socketTag(serverId));
    // Most servers' streams have no connection of this transport: nothing to route, nothing to look at.
    if (!live && sockets.length === 0) return;
    const shown = events.filter(([seq, text]) => !this.relay.hides(serverId, seq, text));
    if (live) {
      for (const [seq, text] of shown) {
        const message = parseObject(text);
        if (!message) continue;
        const route = live.connection.route(seq, message);
        if (route !== undefined) this.push(live, route, text);
      }
    }
    for (const ws of sockets) this.toSocket(ws, shown);
  }

  /** The agent behind a server is gone (it exited, was stopped idle, or the sidecar restarted). */
  agentGone(serverId: string): void {
    this.live.get(serverId)?.connection.lost();
    for (const ws of this.relay.sockets(socketTag(serverId))) {
      closeSocket(ws, 1012, "the agent was lost: connect again and reattach sessions with session/load or session/resume");
    }
  }

  /** The sidecar restarted: every agent is gone. */
  allAgentsGone(): void {
    for (const live of this.live.values()) live.connection.lost();
    for (const ws of this.relay.sockets(ACP_SOCKET_TAG)) {
      closeSocket(ws, 1012, "the machine's sidecar restarted: connect again and reattach sessions with session/load or session/resume");
    }
  }

  // ---------------- WebSocket ----------------

  /** The tags and attachment of a new WebSocket connection (accepted by the machine's object). */
  socketSetup(agent: AgentId, who: string, owner: string): { serverId: string; tags: string[]; attachment: SocketAttachment } {
    const serverId = newConnectionId();
    return {
      serverId,
      tags: [ACP_SOCKET_TAG, socketTag(serverId)],
      attachment: { kind: "acp", serverId, agent, who, owner, initialized: false, lastSeq: 0 },
    };
  }

  /** A socket whose holder's token was revoked or expired: it closes saying why, and its agent stops. */
  endSocket(ws: WebSocket, attachment: SocketAttachment, reason: string): void {
    closeSocket(ws, 1008, reason);
    void this.socketClosed(attachment).catch((err: unknown) => console.error(`acp socket ${attachment.serverId}: could not stop its agent:`, err));
  }

  /** One text frame from a WebSocket client: `initialize` first, then anything; answers come back on the socket. */
  async socketMessage(ws: WebSocket, attachment: SocketAttachment, data: string | ArrayBuffer, timeoutMs: number): Promise<void> {
    if (typeof data !== "string") return closeSocket(ws, 1003, "ACP messages are text frames");
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      return sendText(ws, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
    }
    const parsed = JsonRpcMessage.safeParse(value);
    if (!parsed.success) {
      const detail = Array.isArray(value) ? "JSON-RPC batches are not supported" : (parsed.error.issues[0]?.message ?? "not a JSON-RPC message");
      return sendText(ws, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: `Invalid Request: ${detail}` } }));
    }
    const message = parsed.data;
    if (!attachment.initialized) {
      if (message.method !== "initialize" || !isJsonRpcRequest(message)) return closeSocket(ws, 1002, "the first message must be an initialize request");
      const outcome = await this.relay.post({ serverId: attachment.serverId, agent: attachment.agent, message, who: attachment.who }, timeoutMs, false);
      if (!outcome.ok || outcome.value.status !== 200) {
        sendText(ws, errorAnswer(message.id, outcome.ok ? { code: "internal", detail: "no answer to initialize" } : outcome.problem));
        return closeSocket(ws, 1011, "initialize failed");
      }
      const current = acpSocketOf(ws) ?? attachment;
      ws.serializeAttachment({ ...current, initialized: true } satisfies SocketAttachment);
      return sendText(ws, outcome.value.body);
    }
    const outcome = await this.relay.post({ serverId: attachment.serverId, message, who: attachment.who }, ACP_CONNECTION_REQUEST_TIMEOUT_MS, false);
    if (!outcome.ok && "notRunning" in outcome) {
      // Its agent is gone (this object slept through the sidecar's restart): as agentGone() would have said.
      return closeSocket(ws, 1012, "the agent was lost: connect again and reattach sessions with session/load or session/resume");
    }
    if (!isJsonRpcRequest(message)) return;
    if (outcome.ok && outcome.value.status === 200) {
      await this.order.after(attachment.serverId, outcome.value.afterSeq);
      sendText(ws, outcome.value.body);
    } else sendText(ws, errorAnswer(message.id, outcome.ok ? { code: "internal", detail: "the agent's answer did not come back" } : outcome.problem));
  }

  /** The socket closed: its agent stops (a WebSocket connection lives as long as its socket). */
  async socketClosed(attachment: SocketAttachment): Promise<void> {
    this.order.forget(attachment.serverId);
    await this.relay.stop(attachment.serverId);
  }

  private toSocket(ws: WebSocket, events: [number, string][]): void {
    const attachment = acpSocketOf(ws);
    if (!attachment) return;
    let lastSeq = attachment.lastSeq;
    for (const [seq, text] of events) {
      if (seq <= lastSeq) continue; // a batch replayed after the tunnel came back
      lastSeq = seq;
      sendText(ws, text);
    }
    if (lastSeq !== attachment.lastSeq) ws.serializeAttachment({ ...attachment, lastSeq } satisfies SocketAttachment);
  }
}

function unknownConnection(): ProblemInit {
  return {
    code: "not_found",
    detail:
      "Unknown Acp-Connection-Id: the connection was closed, or this object restarted; connect again (initialize) and reattach sessions with session/load",
  };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    // Checked by hand, not parsed: this runs for every message an agent writes to a connection.
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function parseAnswer(body: string): { ok: boolean; result: unknown } {
  const message = parseObject(body);
  return { ok: message !== null && message.error === undefined, result: message?.result };
}

function sendText(ws: WebSocket, text: string): void {
  try {
    ws.send(text);
  } catch {
    // closing: the client reconnects and reattaches
  }
}

function closeSocket(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, closeReason(reason));
  } catch {
    // already closed
  }
}
