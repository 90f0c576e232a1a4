/**
 * One Durable Object per API token (named by the token's public id). It is the authority on whether
 * that token is valid: every request made with it asks this object, never the team object, so checking
 * tokens scales with the people using them and a revocation holds from the next request on
 * (docs/architecture.md, "Trust"). Only the SHA-256 of the secret is kept.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import { timingSafeEqualText } from "../../lib/secrets";
import { TokenInfo } from "@agent-runtime/protocol/trust";
import { z } from "zod";
import { Identity } from "../../lib/identity";
import { getStored, listStored } from "../storage/stored";

/** A token as its object keeps it: what the API shows of it, and the hex SHA-256 of the whole token. */
export const StoredToken = TokenInfo.extend({ hash: z.string() });
export type StoredToken = z.output<typeof StoredToken>;

export type TokenCheck = { ok: true; token: TokenInfo } | { ok: false; reason: "unknown" | "revoked" | "expired"; name: string | null };

/** A dashboard sign-in made with this object's token (or, for the bootstrap token, in its own object). */
const StoredSignin = z.object({
  hash: z.string(),
  identity: Identity,
  /** A bootstrap admin's sign-in: the SHA-256 of the API_TOKEN it was made with (it ends when that is no longer configured). */
  apiTokenHash: z.string().optional(),
  createdAtMs: z.number(),
  expiresAtMs: z.number(),
});
type StoredSignin = z.output<typeof StoredSignin>;

/** The machines where a token has held streams. */
const StreamMachines = z.array(z.string());

export type SigninCheck = { ok: true; identity: Identity; apiTokenHash: string | null } | { ok: false; reason: string };

/** Sign-ins one token keeps (browsers, phones); the oldest goes when another is made. */
const SIGNINS_KEPT = 20;

/** Machines a token remembers holding streams on (a person's phone and laptop reach a handful). */
const STREAM_MACHINES_KEPT = 1000;

/** Last-used is written at most this often, so a busy token does not write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function tokenInfo(t: StoredToken): TokenInfo {
  return {
    id: t.id,
    name: t.name,
    role: t.role,
    machines: t.machines,
    createdAtMs: t.createdAtMs,
    createdBy: t.createdBy,
    expiresAtMs: t.expiresAtMs,
    lastUsedMs: t.lastUsedMs,
    revokedAtMs: t.revokedAtMs,
  };
}

export class TokenObject extends DurableObject<Env> {
  private cached: StoredToken | null | undefined;
  private streamMachines: Set<string> | undefined;

  private async stored(): Promise<StoredToken | null> {
    if (this.cached === undefined) this.cached = (await getStored(this.ctx.storage, "token", StoredToken)) ?? null;
    return this.cached;
  }

  private async save(token: StoredToken): Promise<void> {
    this.cached = token;
    await this.ctx.storage.put("token", token);
  }

  async create(token: StoredToken): Promise<void> {
    if (await this.stored()) throw new Error(`token ${token.id} exists`);
    await this.save(token);
  }

  async check(hash: string, nowMs: number): Promise<TokenCheck> {
    const token = await this.stored();
    if (!token || !timingSafeEqualText(hash, token.hash)) return { ok: false, reason: "unknown", name: null };
    if (token.revokedAtMs !== null) return { ok: false, reason: "revoked", name: token.name };
    if (token.expiresAtMs !== null && token.expiresAtMs <= nowMs) return { ok: false, reason: "expired", name: token.name };
    if (token.lastUsedMs === null || nowMs - token.lastUsedMs >= LAST_USED_RESOLUTION_MS) await this.save({ ...token, lastUsedMs: nowMs });
    return { ok: true, token: tokenInfo(token) };
  }

  async revoke(nowMs: number): Promise<TokenInfo | null> {
    const token = await this.stored();
    if (!token) return null;
    if (token.revokedAtMs === null) await this.save({ ...token, revokedAtMs: nowMs });
    return tokenInfo((await this.stored())!);
  }

  // ---------- where this token holds live streams (docs/architecture.md, "Streams end with their token") ----------

  /**
   * A machine's object holds a stream this token opened: a revocation will reach it. Written once per
   * machine; answers whether the token is already revoked or expired (a revocation that raced the opening).
   */
  async streamsOn(machine: string, nowMs: number): Promise<{ revoked: boolean }> {
    this.streamMachines ??= new Set((await getStored(this.ctx.storage, "streams-on", StreamMachines)) ?? []);
    if (!this.streamMachines.has(machine)) {
      this.streamMachines.add(machine);
      // Bounded: past the limit the oldest machines are forgotten (their streams still end when they expire).
      const kept = [...this.streamMachines].slice(-STREAM_MACHINES_KEPT);
      this.streamMachines = new Set(kept);
      await this.ctx.storage.put("streams-on", kept);
    }
    const token = await this.stored();
    return { revoked: token !== null && (token.revokedAtMs !== null || (token.expiresAtMs !== null && token.expiresAtMs <= nowMs)) };
  }

  /** The machines where this token has held streams. */
  async streamsHeldOn(): Promise<string[]> {
    return (await getStored(this.ctx.storage, "streams-on", StreamMachines)) ?? [];
  }

  async info(): Promise<TokenInfo | null> {
    const token = await this.stored();
    return token ? tokenInfo(token) : null;
  }

  // ---------- dashboard sign-ins: a session cookie instead of the token in the page (docs/architecture.md, "Trust") ----------

  /** Keep a new sign-in of `identity` (whose token this object holds, if it holds one) until `expiresAtMs`. */
  async openSignin(id: string, hash: string, identity: Identity, nowMs: number, expiresAtMs: number, apiTokenHash: string | null): Promise<void> {
    const all = await listStored(this.ctx.storage, "signin:", StoredSignin);
    const oldest = [...all.entries()].sort((a, b) => a[1].createdAtMs - b[1].createdAtMs);
    while (oldest.length >= SIGNINS_KEPT) await this.ctx.storage.delete(oldest.shift()![0]);
    await this.ctx.storage.put<StoredSignin>(`signin:${id}`, { hash, identity, createdAtMs: nowMs, expiresAtMs, ...(apiTokenHash ? { apiTokenHash } : {}) });
  }

  /** A sign-in holds while it has not expired nor been closed, and while the token it was made with holds. */
  async checkSignin(id: string, hash: string, nowMs: number): Promise<SigninCheck> {
    const signin = await getStored(this.ctx.storage, `signin:${id}`, StoredSignin);
    if (!signin || !timingSafeEqualText(hash, signin.hash)) return { ok: false, reason: "the sign-in is not valid (signed out?)" };
    if (signin.expiresAtMs <= nowMs) return { ok: false, reason: "the sign-in expired; sign in again" };
    const token = await this.stored();
    if (token) {
      if (token.revokedAtMs !== null) return { ok: false, reason: `the token '${token.name}' this sign-in was made with is revoked` };
      if (token.expiresAtMs !== null && token.expiresAtMs <= nowMs) return { ok: false, reason: `the token '${token.name}' expired` };
    }
    return { ok: true, identity: signin.identity, apiTokenHash: signin.apiTokenHash ?? null };
  }

  async closeSignin(id: string): Promise<boolean> {
    return this.ctx.storage.delete(`signin:${id}`);
  }
}
