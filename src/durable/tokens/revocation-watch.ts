/**
 * A machine's object answers for the revocation of the tokens relayed through it (docs/architecture.md,
 * "Trust", "Tokens checked once per isolate"). The worker keeps a token it verified in its isolate
 * (http/token-cache.ts) and, on the relay's hot path, does not ask the token's object again: this object,
 * which every relayed message reaches anyway, refuses a revoked token instead.
 *
 * How it learns a revocation at once: the first message of a token here tells the token's own object that
 * the token is used on this machine (`streamsOn`, the list a revocation walks, the same one its streams use)
 * and learns from the answer whether it is revoked already; a revocation then calls `endStreamsOf` on every
 * machine of that list before it answers, which marks the token here. A token is asked about once per
 * object lifetime: an object that was evicted from memory forgot both marks and asks again.
 */
import type { ProblemInit } from "@agent-runtime/protocol/problems";

export interface RevocationHost {
  /** Tell the token's object this machine relays for it; answers whether it is revoked or expired already. */
  announce(tokenId: string): Promise<{ revoked: boolean }>;
}

export class RevocationWatch {
  /** Tokens announced (or being announced) here, with whether they still hold. */
  private readonly live = new Map<string, Promise<boolean>>();
  /** Tokens revoked, as this object heard it (from a revocation, or from the token's object). */
  private readonly revoked = new Set<string>();

  constructor(private readonly host: RevocationHost) {}

  /** The refusal of a caller whose token was revoked, or null when it holds (a token-less caller always holds). */
  async refusal(caller: { tokenId: string | null; name: string }): Promise<ProblemInit | null> {
    const { tokenId } = caller;
    if (tokenId === null) return null;
    if (!this.revoked.has(tokenId)) {
      let holds = this.live.get(tokenId);
      if (!holds) {
        holds = this.host.announce(tokenId).then(({ revoked }) => !revoked);
        this.live.set(tokenId, holds);
        // Not reached: asked again with the next message (the message itself fails, never passes unchecked).
        holds.catch(() => this.live.delete(tokenId));
      }
      if (await holds) return null;
      this.revoked.add(tokenId);
    }
    return { code: "token_invalid", detail: `the token '${caller.name}' is revoked`, extensions: { reason: "revoked" } };
  }

  /** The token was revoked (the revocation's call to every machine it was used on). */
  revoke(tokenId: string): void {
    this.revoked.add(tokenId);
    this.live.delete(tokenId);
  }
}
