/**
 * Short-lived tickets (docs/architecture.md, "Trust"): a browser cannot put a header on a WebSocket or an
 * EventSource, and an API token in a URL would outlive the page that used it. The dashboard trades its
 * token for a ticket (POST /v1/tickets) and puts that in `?access_token=`; the ticket names the same
 * identity, is signed with the worker's secret, works only on those streaming GETs, and expires in a minute.
 *
 *   tkt.<claims, base64url JSON>.<HMAC-SHA256(TUNNEL_SECRET, "ticket:" + claims)>
 */
import { z } from "zod";
import { base64url } from "@agent-runtime/protocol/machine-token";
import { MachineScope, Role } from "@agent-runtime/protocol/trust";
import type { Identity } from "./access";

export const TICKET_TTL_MS = 60_000;
const PREFIX = "tkt";
const encoder = new TextEncoder();

const Claims = z.object({
  name: z.string(),
  role: Role,
  machines: MachineScope,
  tokenId: z.string().nullable(),
  /** When the identity itself expires (its token's expiry), if ever. */
  identityExpiresAtMs: z.number().nullable(),
  expiresAtMs: z.number(),
});

function key(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  try {
    return Uint8Array.from(atob(padded), (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

export async function mintTicket(secret: string, identity: Identity, nowMs = Date.now()): Promise<{ ticket: string; expiresAtMs: number }> {
  if (!secret) throw new Error("TUNNEL_SECRET is empty");
  const expiresAtMs = Math.min(nowMs + TICKET_TTL_MS, identity.expiresAtMs ?? Number.POSITIVE_INFINITY);
  const claims: z.infer<typeof Claims> = {
    name: identity.name,
    role: identity.role,
    machines: identity.machines,
    tokenId: identity.tokenId,
    identityExpiresAtMs: identity.expiresAtMs,
    expiresAtMs,
  };
  const payload = base64url(encoder.encode(JSON.stringify(claims)));
  const mac = await crypto.subtle.sign("HMAC", await key(secret), encoder.encode(`ticket:${payload}`));
  return { ticket: `${PREFIX}.${payload}.${base64url(mac)}`, expiresAtMs };
}

export function isTicket(token: string): boolean {
  return token.startsWith(`${PREFIX}.`);
}

/** The identity a ticket names, or why it is refused (a forged, altered or expired ticket). */
export async function verifyTicket(
  secret: string,
  ticket: string,
  nowMs = Date.now(),
): Promise<{ ok: true; identity: Identity } | { ok: false; reason: string }> {
  const [prefix, payload, macText, ...rest] = ticket.split(".");
  const mac = macText ? fromBase64url(macText) : null;
  if (!secret || prefix !== PREFIX || !payload || !mac || rest.length > 0) return { ok: false, reason: "the ticket is not valid" };
  if (!(await crypto.subtle.verify("HMAC", await key(secret), mac, encoder.encode(`ticket:${payload}`))))
    return { ok: false, reason: "the ticket is not valid" };
  const bytes = fromBase64url(payload);
  const claims = bytes ? Claims.safeParse(JSON.parse(new TextDecoder().decode(bytes))) : null;
  if (!claims?.success) return { ok: false, reason: "the ticket is not valid" };
  if (claims.data.expiresAtMs <= nowMs) return { ok: false, reason: "the ticket expired; ask for a new one (POST /v1/tickets)" };
  const { name, role, machines, tokenId, identityExpiresAtMs } = claims.data;
  return { ok: true, identity: { name, role, machines, tokenId, expiresAtMs: identityExpiresAtMs } };
}
