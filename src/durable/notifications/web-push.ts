/**
 * Web Push from the Workers runtime, WebCrypto only (docs/architecture.md, "Notifications"):
 * the payload encrypted as RFC 8291 says (`aes128gcm`, RFC 8188, one record), and the push service
 * told who sends it with a VAPID JWT (RFC 8292), signed by `jose`.
 */
import { importJWK, SignJWT } from "jose";

const encoder = new TextEncoder();

export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

/** P-256's field prime and curve constant b (SEC 2, §2.4.2; a = -3). */
const P256_P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const P256_B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

function bigOf(bytes: Uint8Array): bigint {
  return bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);
}

/**
 * Is this a browser's push key as PushManager gives it: an uncompressed point (0x04 ‖ x ‖ y) on P-256?
 * Checked with the curve's equation y² = x³ − 3x + b (mod p), so that a key that cannot be one (65 zero
 * bytes) is refused when the subscription is made, not at every delivery.
 */
export function isP256Point(bytes: Uint8Array): boolean {
  if (bytes.length !== 65 || bytes[0] !== 4) return false;
  const x = bigOf(bytes.slice(1, 33));
  const y = bigOf(bytes.slice(33, 65));
  if (x >= P256_P || y >= P256_P) return false;
  const mod = (n: bigint) => ((n % P256_P) + P256_P) % P256_P;
  return mod(y * y) === mod(x * x * x - 3n * x + P256_B);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function hmac(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}

/** HKDF-SHA-256 with one block of output (all RFC 8291 needs): extract, then expand to `length` bytes. */
async function hkdf(salt: Uint8Array, ikm: Uint8Array, info: Uint8Array, length: number): Promise<Uint8Array> {
  const prk = await hmac(salt, ikm);
  return (await hmac(prk, concat(info, new Uint8Array([1])))).slice(0, length);
}

/** A P-256 key pair from its raw public point and private scalar (as RFC 8291's example gives them). */
async function importEcdhPair(publicRaw: Uint8Array, privateD: Uint8Array): Promise<CryptoKeyPair> {
  const jwk = { kty: "EC", crv: "P-256", x: base64url(publicRaw.slice(1, 33)), y: base64url(publicRaw.slice(33, 65)), d: base64url(privateD) };
  const privateKey = await crypto.subtle.importKey("jwk", jwk, { name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  const publicKey = await crypto.subtle.importKey("raw", publicRaw, { name: "ECDH", namedCurve: "P-256" }, true, []);
  return { privateKey, publicKey };
}

export interface PushTarget {
  /** The browser's key (`keys.p256dh`): an uncompressed P-256 point, 65 bytes. */
  p256dh: Uint8Array;
  /** The browser's authentication secret (`keys.auth`), 16 bytes. */
  auth: Uint8Array;
}

/**
 * The body of a push message: `salt ‖ rs ‖ idlen ‖ keyid ‖ ciphertext` with one record. `fixed` is for
 * the RFC's example only: a real message uses a fresh key pair and salt each time.
 */
export async function encryptPayload(
  target: PushTarget,
  plaintext: Uint8Array,
  fixed?: { salt: Uint8Array; senderPublic: Uint8Array; senderPrivate: Uint8Array },
): Promise<Uint8Array> {
  const salt = fixed?.salt ?? crypto.getRandomValues(new Uint8Array(16));
  const sender = fixed
    ? await importEcdhPair(fixed.senderPublic, fixed.senderPrivate)
    : await newKeyPair({ name: "ECDH", namedCurve: "P-256" }, ["deriveBits"]);
  const senderPublic = new Uint8Array(await exportRaw(sender.publicKey));
  const receiver = await crypto.subtle.importKey("raw", target.p256dh, { name: "ECDH", namedCurve: "P-256" }, false, []);
  // `public` is the standard member (workerd and Node read it); the Workers types spell it `$public`, so it
  // is passed as a value of its own type (a literal in the call would be refused).
  const ecdh = { name: "ECDH", public: receiver };
  const shared = new Uint8Array(await crypto.subtle.deriveBits(ecdh, sender.privateKey, 256));
  // RFC 8291 §3.4: the auth secret and both public keys go into the input keying material.
  const ikm = await hkdf(target.auth, shared, concat(encoder.encode("WebPush: info\0"), target.p256dh, senderPublic), 32);
  const cek = await hkdf(salt, ikm, encoder.encode("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, encoder.encode("Content-Encoding: nonce\0"), 12);
  const key = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["encrypt"]);
  // One record, the last: the content, then the padding delimiter 0x02 (RFC 8188 §2).
  const ciphertext = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, concat(plaintext, new Uint8Array([2]))));
  const header = new Uint8Array(16 + 4 + 1);
  header.set(salt, 0);
  new DataView(header.buffer).setUint32(16, 4096);
  header[20] = senderPublic.length;
  return concat(header, senderPublic, ciphertext);
}

/** The application server's VAPID key pair (P-256), in the form the web-push tools print: raw, base64url. */
export interface VapidKey {
  jwk: JsonWebKey;
  /** The public key as browsers take it (`applicationServerKey`): the uncompressed point, base64url. */
  publicKey: string;
  /** Who runs this deployment, for push services to reach (`mailto:` or `https:`). */
  subject: string;
}

/** From VAPID_PUBLIC_KEY (65-byte point) and VAPID_PRIVATE_KEY (32-byte scalar), both base64url. */
export function vapidFromKeys(publicKey: string, privateKey: string, subject: string): VapidKey {
  const point = fromBase64url(publicKey);
  const d = fromBase64url(privateKey);
  if (point.length !== 65 || point[0] !== 4 || d.length !== 32)
    throw new Error("VAPID_PUBLIC_KEY/VAPID_PRIVATE_KEY are not a P-256 key pair (65 and 32 bytes, base64url)");
  return { jwk: { kty: "EC", crv: "P-256", x: base64url(point.slice(1, 33)), y: base64url(point.slice(33)), d: privateKey }, publicKey, subject };
}

/** `Authorization: vapid t=<JWT>, k=<public key>` for one push service (its origin is the audience), valid 12 hours. */
export async function vapidAuthorization(vapid: VapidKey, endpoint: string, nowMs = Date.now()): Promise<string> {
  const key = await importJWK({ ...vapid.jwk, alg: "ES256" }, "ES256");
  const jwt = await new SignJWT({ sub: vapid.subject })
    .setProtectedHeader({ alg: "ES256", typ: "JWT" })
    .setAudience(new URL(endpoint).origin)
    .setExpirationTime(Math.floor(nowMs / 1000) + 12 * 3600)
    .sign(key);
  return `vapid t=${jwt}, k=${vapid.publicKey}`;
}

/** A new VAPID key pair (`npm start` writes one into .dev.vars; a deployment sets them with wrangler). */
export async function generateVapidKeys(): Promise<{ publicKey: string; privateKey: string }> {
  const pair = await newKeyPair({ name: "ECDSA", namedCurve: "P-256" }, ["sign", "verify"]);
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  if (jwk instanceof ArrayBuffer) throw new Error("exportKey(jwk) answered bytes");
  const point = concat(new Uint8Array([4]), fromBase64url(jwk.x!), fromBase64url(jwk.y!));
  return { publicKey: base64url(point), privateKey: jwk.d! };
}

/** An extractable key pair (WebCrypto's generateKey answers a single key for symmetric algorithms: never these). */
async function newKeyPair(algorithm: { name: "ECDH" | "ECDSA"; namedCurve: "P-256" }, usages: string[]): Promise<CryptoKeyPair> {
  const made = await crypto.subtle.generateKey(algorithm, true, usages);
  if (!("privateKey" in made)) throw new Error(`generateKey(${algorithm.name}) answered a single key`);
  return made;
}

async function exportRaw(key: CryptoKey): Promise<ArrayBuffer> {
  const raw = await crypto.subtle.exportKey("raw", key);
  if (!(raw instanceof ArrayBuffer)) throw new Error("exportKey(raw) answered no bytes");
  return raw;
}
