/**
 * Machine tokens: a sidecar proves which machine it is with
 *
 *   mt2.<machine>.<generation>.<expires>.<mac>     mac = HMAC-SHA256(TUNNEL_SECRET, "machine:<machine>:<generation>:<expires>")
 *
 * `expires` is a Unix time in seconds, 0 for never. The worker checks the MAC and the expiry without
 * any storage, so a token for machine A never opens machine B (the id is inside the MAC). The
 * generation is checked by the machine's own Durable Object when the tunnel connects: revoking a
 * machine raises its generation, which refuses every token minted before (docs/architecture.md, "Trust").
 * WebCrypto only, so the worker (workerd) and Node compute the same thing.
 */
const PREFIX = "mt2";
const encoder = new TextEncoder();

/** Bytes as unpadded base64url (tokens carry it in URLs and headers). */
export function base64url(bytes: ArrayBuffer | Uint8Array): string {
  let binary = "";
  for (const b of new Uint8Array(bytes)) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]{43}$/.test(text)) return null;
  const binary = atob(`${text.replace(/-/g, "+").replace(/_/g, "/")}=`);
  const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  // The last of 43 characters carries 2 bits that no byte uses: only the canonical spelling is accepted,
  // so that a token has exactly one text (one MAC, one spelling).
  return base64url(bytes) === text ? bytes : null;
}

function key(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

function signedText(machine: string, generation: number, expiresSec: number): string {
  return `machine:${machine}:${generation}:${expiresSec}`;
}

export interface MachineTokenClaims {
  machine: string;
  /** Tokens of an older generation than the machine's current one are revoked. */
  generation: number;
  /** null: never expires. */
  expiresAtMs: number | null;
}

export async function mintMachineToken(secret: string, machine: string, opts: { generation?: number; expiresAtMs?: number | null } = {}): Promise<string> {
  if (!secret) throw new Error("TUNNEL_SECRET is empty");
  const generation = opts.generation ?? 1;
  if (!Number.isSafeInteger(generation) || generation < 1) throw new Error("a machine token generation is a whole number from 1");
  const expiresSec = opts.expiresAtMs ? Math.ceil(opts.expiresAtMs / 1000) : 0;
  const mac = await crypto.subtle.sign("HMAC", await key(secret, "sign"), encoder.encode(signedText(machine, generation, expiresSec)));
  return `${PREFIX}.${machine}.${generation}.${expiresSec}.${base64url(mac)}`;
}

/** Split a token into its parts, or null when it is not of this format. The machine id may itself hold dots. */
function parse(token: string): { machine: string; generation: number; expiresSec: number; mac: Uint8Array<ArrayBuffer> } | null {
  const parts = token.split(".");
  if (parts.length < 5 || parts[0] !== PREFIX) return null;
  const mac = fromBase64url(parts.at(-1)!);
  const expires = parts.at(-2)!;
  const generation = parts.at(-3)!;
  if (!mac || !/^\d{1,12}$/.test(expires) || !/^[1-9]\d{0,8}$/.test(generation)) return null;
  return { machine: parts.slice(1, -3).join("."), generation: Number(generation), expiresSec: Number(expires), mac };
}

export type MachineTokenCheck = { ok: true; claims: MachineTokenClaims } | { ok: false; reason: string };

/** Is `token` a valid, unexpired token of exactly this machine under this secret? (The generation is the caller's to check.) */
export async function verifyMachineToken(secret: string, machine: string, token: string, nowMs = Date.now()): Promise<MachineTokenCheck> {
  const parsed = secret && token ? parse(token) : null;
  if (!parsed || parsed.machine !== machine) return { ok: false, reason: `the machine token is not valid for machine '${machine}'` };
  const text = encoder.encode(signedText(machine, parsed.generation, parsed.expiresSec));
  // crypto.subtle.verify compares in constant time.
  if (!(await crypto.subtle.verify("HMAC", await key(secret, "verify"), parsed.mac, text))) {
    return { ok: false, reason: `the machine token is not valid for machine '${machine}'` };
  }
  if (parsed.expiresSec !== 0 && parsed.expiresSec * 1000 <= nowMs) {
    return { ok: false, reason: `the machine token of '${machine}' expired at ${new Date(parsed.expiresSec * 1000).toISOString()}` };
  }
  return { ok: true, claims: { machine, generation: parsed.generation, expiresAtMs: parsed.expiresSec ? parsed.expiresSec * 1000 : null } };
}
