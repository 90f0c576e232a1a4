/**
 * The object's sockets that are not the tunnel (docs/architecture.md, "The machine object"): each kind is a
 * registered feature's (`MachineFeature.sockets`: terminal viewers, ACP's WebSocket connections, previews),
 * found by its tag after the object slept, checked against its holder's expiry before its message is read,
 * and ended with its kind's last word.
 */
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { StreamHolders } from "../streams/stream-holders";
import type { MachineFeature, SocketKind } from "./feature";

export class ClientSockets {
  private readonly kinds: SocketKind[];

  constructor(
    features: readonly MachineFeature[],
    private readonly holders: StreamHolders,
    private readonly tagsOf: (ws: WebSocket) => string[],
  ) {
    this.kinds = features.flatMap((feature) => feature.sockets ?? []);
  }

  /** A message on one of these sockets (false: the socket is the tunnel's). */
  async message(ws: WebSocket, tags: string[], message: string | ArrayBuffer): Promise<boolean> {
    const kind = this.kindOf(tags);
    if (!kind) return false;
    if (this.holders.socketExpired(ws)) return true;
    await kind.message(ws, message);
    return true;
  }

  /** One of these sockets closed: its kind lets go of it (false: the tunnel's). */
  async closed(ws: WebSocket, code: number, reason: string): Promise<boolean> {
    const kind = this.kindOf(this.tagsOf(ws));
    if (!kind) return false;
    await kind.closed(ws, code, reason);
    return true;
  }

  /** Its holder's token was revoked or expired: it ends with its kind's last word. */
  end(ws: WebSocket, problem: ProblemInit): void {
    this.kindOf(this.tagsOf(ws))?.end(ws, problem);
  }

  private kindOf(tags: string[]): SocketKind | undefined {
    return this.kinds.find((kind) => tags.includes(kind.tag));
  }
}
