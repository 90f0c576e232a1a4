/**
 * Issued tokens verified once per isolate for the relay's hot path (docs/architecture.md, "Tokens checked
 * once per isolate"). Every request with an issued token used to ask that token's Durable Object; on
 * `POST /v1/acp/{server_id}`, a conversation's every message, the isolate now keeps what the object
 * answered, and the machine's object, which each of those messages reaches anyway, answers for the
 * token's revocation (durable/tokens/revocation-watch.ts): a revocation ends access at the next message,
 * in every isolate, with no time-to-live to wait out. Every other request asks the token's object as before.
 *
 * What is kept: the identity, by the SHA-256 of the whole token (never the secret), for at most a minute
 * (then the object is asked again, which also keeps the token's last use to the minute, as its object
 * records it), never past the token's expiry, and at most MAX_KEPT tokens (a flood of valid tokens cannot
 * grow it: the oldest goes first).
 */
import type { Identity } from "../lib/identity";

/** After this, the token's object is asked again (its last-used time is written to this resolution too). */
export const VERIFIED_FOR_MS = 60_000;
const MAX_KEPT = 2_000;

/**
 * The requests whose machine object answers for their token's revocation: a message to an ACP server,
 * under `/v1` or `/machines/{machine}/v1` (routes/acp.ts, MachineObject.acpPost). Only these take a kept token.
 */
const RELAYED = /^(?:\/machines\/[^/]+)?\/v1\/acp\/[^/]+$/;

export function revocationAnsweredByMachine(method: string, path: string): boolean {
  return method === "POST" && RELAYED.test(path);
}

export class VerifiedTokens {
  private readonly kept = new Map<string, { identity: Identity; verifiedAtMs: number }>();

  /** The identity a token (by its hash) was verified as, if that was within the minute and it has not expired. */
  get(hash: string, nowMs: number): Identity | null {
    const entry = this.kept.get(hash);
    if (!entry) return null;
    const { identity, verifiedAtMs } = entry;
    if (nowMs - verifiedAtMs >= VERIFIED_FOR_MS || (identity.expiresAtMs !== null && identity.expiresAtMs <= nowMs)) {
      this.kept.delete(hash);
      return null;
    }
    return identity;
  }

  /** The token's object said it holds. */
  keep(hash: string, identity: Identity, nowMs: number): void {
    this.kept.delete(hash); // re-inserted last: the Map's order is the age
    if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(hash, { identity, verifiedAtMs: nowMs });
  }

  /** The token's object refused it: nothing of it is kept. */
  forget(hash: string): void {
    this.kept.delete(hash);
  }

  get size(): number {
    return this.kept.size;
  }
}

/** This isolate's. */
export const verifiedTokens = new VerifiedTokens();
