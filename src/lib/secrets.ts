/** Secrets of the worker: comparing them and making API tokens. WebCrypto only (workerd and Node alike). */
import { base64url } from "@agent-runtime/protocol/machine-token";

const encoder = new TextEncoder();

/**
 * Constant-time comparison of two strings (lengths may leak, contents do not), code unit by code unit:
 * nothing is encoded (a request with a bearer token compares it against every API_TOKEN, and an encoding
 * allocates), and two strings are equal exactly when their code units are.
 */
export function timingSafeEqualText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i % a.length) || 0) ^ (b.charCodeAt(i % b.length) || 0);
  return diff === 0;
}

/** Whether `presented` is one of `secrets`: each compared in constant time, and all of them, so timing says nothing about which one matched. */
export function isOneOfSecrets(presented: string, secrets: readonly string[]): boolean {
  let ok = false;
  for (const secret of secrets) {
    if (timingSafeEqualText(presented, secret)) ok = true;
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
