import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { base64url, encryptPayload, fromBase64url, generateVapidKeys, isP256Point, vapidAuthorization, vapidFromKeys } from "./web-push";

// RFC 8291, Appendix A.
const RFC = {
  plaintext: "When I grow up, I want to be a watermelon",
  asPublic: "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
  asPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
  uaPublic: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
  uaPrivate: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
  auth: "BTBZMqHH6r4Tts7J_aSIgg",
  salt: "DGv6ra1nlYgDCS1FRnbzlw",
  message:
    "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
};

describe("encryptPayload (RFC 8291)", () => {
  it("reproduces Appendix A byte for byte", async () => {
    const body = await encryptPayload({ p256dh: fromBase64url(RFC.uaPublic), auth: fromBase64url(RFC.auth) }, new TextEncoder().encode(RFC.plaintext), {
      salt: fromBase64url(RFC.salt),
      senderPublic: fromBase64url(RFC.asPublic),
      senderPrivate: fromBase64url(RFC.asPrivate),
    });
    expect(base64url(body)).toBe(RFC.message);
  });

  it("uses a fresh salt and key for every message", async () => {
    const receiver = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
    const target = {
      p256dh: new Uint8Array((await crypto.subtle.exportKey("raw", receiver.publicKey)) as ArrayBuffer),
      auth: crypto.getRandomValues(new Uint8Array(16)),
    };
    const a = await encryptPayload(target, new TextEncoder().encode("same"));
    const b = await encryptPayload(target, new TextEncoder().encode("same"));
    expect(base64url(a.slice(0, 16))).not.toBe(base64url(b.slice(0, 16)));
    expect(base64url(a.slice(21, 86))).not.toBe(base64url(b.slice(21, 86)));
  });
});

describe("isP256Point", () => {
  it("takes a browser's key and the RFC's, and refuses what cannot be a point on P-256", async () => {
    expect(isP256Point(fromBase64url(RFC.uaPublic))).toBe(true);
    expect(isP256Point(fromBase64url(RFC.asPublic))).toBe(true);
    const fresh = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
    expect(isP256Point(new Uint8Array((await crypto.subtle.exportKey("raw", fresh.publicKey)) as ArrayBuffer))).toBe(true);
    expect(isP256Point(new Uint8Array(65))).toBe(false); // 65 zero bytes
    const zeroPoint = new Uint8Array(65);
    zeroPoint[0] = 4;
    expect(isP256Point(zeroPoint)).toBe(false); // (0, 0)
    const nudged = fromBase64url(RFC.uaPublic);
    nudged[64] = nudged[64]! ^ 1;
    expect(isP256Point(nudged)).toBe(false); // y off the curve by one bit
    expect(isP256Point(fromBase64url(RFC.uaPublic).slice(0, 33))).toBe(false); // compressed
  });
});

describe("VAPID (RFC 8292)", () => {
  it("signs an ES256 JWT for the push service's origin that its public key verifies", async () => {
    const keys = await generateVapidKeys();
    const vapid = vapidFromKeys(keys.publicKey, keys.privateKey, "mailto:ops@example.com");
    const header = await vapidAuthorization(vapid, "https://push.example.net/send/abc?x=1", 1_700_000_000_000);
    const match = /^vapid t=([^,]+), k=([A-Za-z0-9_-]+)$/.exec(header)!;
    expect(match[2]).toBe(vapid.publicKey);
    expect(fromBase64url(match[2]!).length).toBe(65);
    expect(decodeProtectedHeader(match[1]!)).toEqual({ alg: "ES256", typ: "JWT" });
    const raw = fromBase64url(match[2]!);
    const publicKey = await importJWK({ kty: "EC", crv: "P-256", x: base64url(raw.slice(1, 33)), y: base64url(raw.slice(33)) }, "ES256");
    const { payload } = await jwtVerify(match[1]!, publicKey, { audience: "https://push.example.net", currentDate: new Date(1_700_000_000_000) });
    expect(payload).toMatchObject({ sub: "mailto:ops@example.com", exp: 1_700_000_000 + 12 * 3600 });
  });

  it("refuses keys that are not a P-256 pair", () => {
    expect(() => vapidFromKeys("AAAA", "BBBB", "mailto:x@y")).toThrow(/P-256/);
  });
});
