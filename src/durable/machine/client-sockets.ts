/**
 * The object's sockets that are not the tunnel (docs/architecture.md, "The machine object"): terminal
 * viewers and ACP's WebSocket connections. Each is found by its tags after the object slept, checked
 * against its holder's expiry before its message is read, and ended with its kind's last word.
 */
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { problemResponse } from "../../lib/problem-response";
import { ACP_SOCKET_TAG, type AcpConnections, acpSocketOf } from "../acp-transport/connection-registry";
import { closeTextOf, type StreamHolder, type StreamHolders } from "../streams/stream-holders";
import { TERMINAL_TAG, type TerminalViewers, viewerOf } from "../terminals/terminal-viewers";
import { PREVIEW_TAG, type PreviewStreams, previewSocketOf } from "../preview/preview-streams";
import { closeQuietly } from "../../lib/close-reason";

export class ClientSockets {
  constructor(
    private readonly viewers: TerminalViewers,
    private readonly connections: AcpConnections,
    private readonly holders: StreamHolders,
    private readonly tagsOf: (ws: WebSocket) => string[],
    private readonly acpTimeoutMs: number,
    private readonly previews: PreviewStreams,
  ) {}

  /** A terminal's upgrade (object-requests.ts), attached for the holder the route named. */
  attachTerminal(request: Request, process: string, holder: StreamHolder | null): Response {
    if (!holder) return problemResponse({ code: "invalid_request", detail: "a terminal is opened for someone: the route names its holder" });
    return this.viewers.attach(request, process, this.holders.socketTags(holder));
  }

  /** A message on one of these sockets (false: the socket is the tunnel's). */
  async message(ws: WebSocket, tags: string[], message: string | ArrayBuffer): Promise<boolean> {
    const terminal = tags.includes(TERMINAL_TAG);
    const preview = tags.includes(PREVIEW_TAG) ? previewSocketOf(ws) : null;
    if (!terminal && !preview && !tags.includes(ACP_SOCKET_TAG)) return false;
    if (this.holders.socketExpired(ws)) return true;
    if (preview) {
      this.previews.socketMessage(ws, preview, message);
      return true;
    }
    const viewer = terminal ? viewerOf(ws) : null;
    const acp = terminal ? null : acpSocketOf(ws);
    if (viewer) await this.viewers.message(ws, viewer, message);
    else if (acp) await this.connections.socketMessage(ws, acp, message, this.acpTimeoutMs);
    return true;
  }

  /** One of these sockets closed: a viewer detaches, an ACP connection's socket stops its agent (false: the tunnel's). */
  async closed(ws: WebSocket, code: number, reason: string): Promise<boolean> {
    const preview = previewSocketOf(ws);
    if (preview) {
      this.previews.socketClosed(preview, code, reason);
      return true;
    }
    const viewer = viewerOf(ws);
    if (viewer) {
      this.viewers.detach(ws, viewer);
      return true;
    }
    const acp = acpSocketOf(ws);
    if (acp) await this.connections.socketClosed(acp);
    return acp !== null;
  }

  /** Its holder's token was revoked or expired: it ends with its kind's last word. */
  end(ws: WebSocket, problem: ProblemInit): void {
    const acp = acpSocketOf(ws);
    const preview = previewSocketOf(ws);
    if (preview) {
      closeQuietly(ws, 1008, problem.detail);
      this.previews.socketClosed(preview, 1008, "");
    } else if (this.tagsOf(ws).includes(TERMINAL_TAG)) this.viewers.endWith(ws, problem);
    else if (acp) this.connections.endSocket(ws, acp, closeTextOf(problem));
  }
}
