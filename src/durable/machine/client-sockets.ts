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
  /**
   * Each socket's kind (null: the tunnel's), from its tags: a socket's tags are set when it is accepted and
   * never change, so they are read once per socket and instance instead of at every message (the
   * sidecar's answers, the relay's hot path, come this way).
   */
  private readonly kindOfSocket = new WeakMap<WebSocket, SocketKind | null>();

  constructor(
    features: readonly MachineFeature[],
    private readonly holders: StreamHolders,
    private readonly tagsOf: (ws: WebSocket) => string[],
  ) {
    this.kinds = features.flatMap((feature) => feature.sockets ?? []);
  }

  /** Whether `ws` is one of these sockets (false: the tunnel's). */
  owns(ws: WebSocket): boolean {
    return this.kindOf(ws) !== null;
  }

  /** A message on one of these sockets (false: the socket is the tunnel's). */
  async message(ws: WebSocket, message: string | ArrayBuffer): Promise<boolean> {
    const kind = this.kindOf(ws);
    if (!kind) return false;
    if (this.holders.socketExpired(ws)) return true;
    await kind.message(ws, message);
    return true;
  }

  /** One of these sockets closed: its kind lets go of it (false: the tunnel's). */
  async closed(ws: WebSocket, code: number, reason: string): Promise<boolean> {
    const kind = this.kindOf(ws);
    if (!kind) return false;
    await kind.closed(ws, code, reason);
    return true;
  }

  /** Its holder's token was revoked or expired: it ends with its kind's last word. */
  end(ws: WebSocket, problem: ProblemInit): void {
    this.kindOf(ws)?.end(ws, problem);
  }

  private kindOf(ws: WebSocket): SocketKind | null {
    const known = this.kindOfSocket.get(ws);
    if (known !== undefined) return known;
    const tags = this.tagsOf(ws);
    const kind = this.kinds.find((k) => tags.includes(k.tag)) ?? null;
    this.kindOfSocket.set(ws, kind);
    return kind;
  }
}
