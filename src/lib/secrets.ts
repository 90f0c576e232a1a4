/** Secrets of the worker: comparing them and making API tokens. WebCrypto only (workerd and Node alike). */
import { base64url } from "@agent-runtime/protocol/machine-token";

const encoder = new TextEncoder();

/** Constant-time comparison of two strings (lengths may leak, contents do not). */
export function timingSafeEqualText(a: string, b: string): boolean {
  return timingSafeEqualBytes(encoder.encode(a), encoder.encode(b));
}

function timingSafeEqualBytes(x: Uint8Array, y: Uint8Array): boolean {
  let diff = x.length ^ y.length;
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) diff |= (x[i % x.length] ?? 0) ^ (y[i % y.length] ?? 0);
  return diff === 0;
}

/**
 * The worker's own secrets (API_TOKEN's), encoded once per isolate: every request with a bearer token
 * compares against them. Keyed by the secret itself, so a changed secret is a new entry; bounded.
 */
const encodedSecrets = new Map<string, Uint8Array>();

function encodedSecret(secret: string): Uint8Array {
  let bytes = encodedSecrets.get(secret);
  if (!bytes) {
    if (encodedSecrets.size >= 64) encodedSecrets.clear();
    bytes = encoder.encode(secret);
    encodedSecrets.set(secret, bytes);
  }
  return bytes;
}

/**
 * Whether `presented` is one of `secrets`, each compared in constant time and all of them compared, so
 * timing says nothing about which one matched. The presented text is encoded once, the secrets never again.
 */
export function isOneOfSecrets(presented: string, secrets: readonly string[]): boolean {
  const bytes = encoder.encode(presented);
  let ok = false;
  for (const secret of secrets) {
    if (timingSafeEqualBytes(bytes, encodedSecret(secret))) ok = true;
  }
  return ok;
}

function hex(bytes: ArrayBuffer | Uint8Array): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * An issued API token: `art.<id>.<secret>`. The id is public (it names the token's Durable Object and
 * appears in the token list); the secret is 256 random bits, kept only as the SHA-256 of the whole token.
 */
const API_TOKEN_FORMAT = /^art\.([0-9a-f]{16})\.[A-Za-z0-9_-]{43}$/;

export function newApiToken(): { id: string; token: string } {
  const id = hex(crypto.getRandomValues(new Uint8Array(8)));
  return { id, token: `art.${id}.${base64url(crypto.getRandomValues(new Uint8Array(32)))}` };
}

/** The public id of an issued token, or null when the text is not one. */
export function apiTokenId(token: string): string | null {
  return API_TOKEN_FORMAT.exec(token)?.[1] ?? null;
}

export async function sha256Hex(text: string): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}
