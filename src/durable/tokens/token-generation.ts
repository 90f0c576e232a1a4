/**
 * The one piece of trust state a machine's object keeps (docs/architecture.md, "Trust"): the generation
 * its machine tokens are minted with. Revoking them all is one increment: a token of an older generation
 * is refused when its sidecar connects, and a sidecar connected with one is closed at once.
 */
import { z } from "zod";
import { attachmentOf } from "../machine/tunnel";
import { getStored } from "../storage/stored";

export class TokenGeneration {
  constructor(
    private readonly storage: DurableObjectStorage,
    /** The sidecar sockets connected now. */
    private readonly sidecars: () => WebSocket[],
  ) {}

  /** The generation new machine tokens are minted with; 1 until the machine's tokens are first revoked. */
  async current(): Promise<number> {
    return (await getStored(this.storage, "token-generation", z.number().int())) ?? 1;
  }

  /** Refuse every token minted so far, and close the tunnel of a sidecar that connected with one. */
  async revoke(): Promise<number> {
    const generation = (await this.current()) + 1;
    await this.storage.put("token-generation", generation);
    for (const ws of this.sidecars()) {
      if ((attachmentOf(ws)?.generation ?? 0) < generation) {
        try {
          ws.close(4001, "this machine's token was revoked");
        } catch {
          // already closing
        }
      }
    }
    return generation;
  }
}
