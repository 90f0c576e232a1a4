/**
 * Machine tokens: a sidecar proves which machine it is with `mt1.<machine>.<mac>`, where
 * mac = HMAC-SHA256(TUNNEL_SECRET, "machine:" + machine). The worker checks it without a
 * database, and a token for machine A can never open machine B (the id is inside the MAC).
 * WebCrypto only, so the worker (workerd) and Node compute the same thing.
 */
const PREFIX = "mt1";
const encoder = new TextEncoder();

function base64url(bytes: ArrayBuffer): string {
  let binary = "";
  for (const b of new Uint8Array(bytes)) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function mac(secret: string, machine: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return base64url(await crypto.subtle.sign("HMAC", key, encoder.encode(`machine:${machine}`)));
}

export async function mintMachineToken(secret: string, machine: string): Promise<string> {
  if (!secret) throw new Error("TUNNEL_SECRET is empty");
  return `${PREFIX}.${machine}.${await mac(secret, machine)}`;
}

/** Constant-time comparison of two strings (lengths may leak, contents do not). */
export function timingSafeEqualText(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) diff |= (x[i % x.length] ?? 0) ^ (y[i % y.length] ?? 0);
  return diff === 0;
}

/** True only when `token` was minted for exactly this machine under this secret. */
export async function verifyMachineToken(secret: string, machine: string, token: string): Promise<boolean> {
  if (!secret || !token) return false;
  const expected = await mintMachineToken(secret, machine);
  return timingSafeEqualText(token, expected);
}
