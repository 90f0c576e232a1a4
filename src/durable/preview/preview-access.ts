/**
 * Who may open a machine's previews (docs/architecture.md, "Previews"): a member of the machine opens one
 * from the dashboard or the API, and gets either
 *  - a grant (host mode): single-use, valid for a minute, redeemed on the preview's own origin for a pass
 *    that the worker puts in a cookie for that host only; or
 *  - a pass in the path (path mode): the preview's address itself carries it.
 * A pass opens one port of this machine for eight hours at most (never past its token's expiry), and ends
 * with its token: a revocation drops every pass the token holds here. Kept in the object's synchronous KV,
 * one entry each, so a previewed request costs one in-memory lookup and no write.
 */
import { z } from "zod";
import { randomHex16 } from "../../lib/ids";
import { StreamHolder } from "../streams/stream-holders";

export const GRANT_TTL_MS = 60_000;
export const PASS_TTL_MS = 8 * 60 * 60_000;
/** Passes a machine keeps: past this, the oldest go (their previews ask for a new one). */
const PASSES_KEPT = 500;

const GRANT_PREFIX = "preview-grant:";
const PASS_PREFIX = "preview-pass:";
const SECRET = /^[0-9a-f]{32}$/;

export const PreviewPass = z.object({
  port: z.number().int().min(1).max(65_535),
  holder: StreamHolder,
  expiresAtMs: z.number(),
});
export type PreviewPass = z.infer<typeof PreviewPass>;

export interface AccessStorage {
  kv: Pick<SyncKvStorage, "get" | "put" | "delete" | "list">;
}

export class PreviewAccess {
  constructor(
    private readonly storage: AccessStorage,
    /** A token that holds a pass here must reach this machine when it is revoked. */
    private readonly watch: (holder: StreamHolder) => void,
  ) {}

  /** A grant (host mode, redeemed once) or a pass (path mode) for `port`, held by `holder`. */
  mint(port: number, holder: StreamHolder, kind: "grant" | "pass", nowMs = Date.now()): { secret: string; expiresAtMs: number } {
    this.watch(holder);
    const secret = randomHex16() + randomHex16();
    if (kind === "grant") {
      const expiresAtMs = nowMs + GRANT_TTL_MS;
      this.storage.kv.put(`${GRANT_PREFIX}${secret}`, { port, holder, expiresAtMs } satisfies PreviewPass);
      return { secret, expiresAtMs };
    }
    return { secret, expiresAtMs: this.keepPass(secret, port, holder, nowMs) };
  }

  /** A grant traded for a pass, once: the second try, an expired or an unknown grant get null. */
  redeem(grant: string, nowMs = Date.now()): { secret: string; pass: PreviewPass } | null {
    if (!SECRET.test(grant)) return null;
    const key = `${GRANT_PREFIX}${grant}`;
    const stored = PreviewPass.safeParse(this.storage.kv.get(key));
    this.storage.kv.delete(key);
    if (!stored.success || stored.data.expiresAtMs <= nowMs) return null;
    const secret = randomHex16() + randomHex16();
    const expiresAtMs = this.keepPass(secret, stored.data.port, stored.data.holder, nowMs);
    return { secret, pass: { ...stored.data, expiresAtMs } };
  }

  /** The pass `secret` names, if it opens `port` now. */
  check(secret: string, port: number, nowMs = Date.now()): PreviewPass | null {
    if (!SECRET.test(secret)) return null;
    const stored = PreviewPass.safeParse(this.storage.kv.get(`${PASS_PREFIX}${secret}`));
    if (!stored.success || stored.data.port !== port || stored.data.expiresAtMs <= nowMs) return null;
    return stored.data;
  }

  /** The token was revoked: its passes and grants here end. */
  revokeHeldBy(tokenId: string): number {
    let dropped = 0;
    for (const prefix of [GRANT_PREFIX, PASS_PREFIX]) {
      for (const [key, value] of this.storage.kv.list({ prefix })) {
        const pass = PreviewPass.safeParse(value);
        if (pass.success && pass.data.holder.tokenId !== tokenId) continue;
        this.storage.kv.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  private keepPass(secret: string, port: number, holder: StreamHolder, nowMs: number): number {
    const expiresAtMs = Math.min(nowMs + PASS_TTL_MS, holder.expiresAtMs ?? Number.POSITIVE_INFINITY);
    this.sweep(nowMs);
    this.storage.kv.put(`${PASS_PREFIX}${secret}`, { port, holder, expiresAtMs } satisfies PreviewPass);
    return expiresAtMs;
  }

  /** Expired grants and passes go when a new one is made; past the bound, the oldest too. */
  private sweep(nowMs: number): void {
    const live: [string, number][] = [];
    for (const prefix of [GRANT_PREFIX, PASS_PREFIX]) {
      for (const [key, value] of this.storage.kv.list({ prefix })) {
        const pass = PreviewPass.safeParse(value);
        if (!pass.success || pass.data.expiresAtMs <= nowMs) this.storage.kv.delete(key);
        else live.push([key, pass.data.expiresAtMs]);
      }
    }
    live.sort((a, b) => a[1] - b[1]);
    for (const [key] of live.slice(0, Math.max(0, live.length - PASSES_KEPT + 1))) this.storage.kv.delete(key);
  }
}
