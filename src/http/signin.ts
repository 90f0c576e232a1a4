/**
 * Dashboard sign-in (docs/architecture.md, "Trust"): the API token is typed once and traded for a cookie
 * the page's scripts cannot read (HttpOnly; Secure; SameSite=Strict), so it is kept across tabs and
 * restarts without ever being stored where a script could leak it. The cookie names a sign-in kept by the
 * token's own Durable Object (the bootstrap token's and an Access identity's by objects of their own): a
 * request with it asks that one object, never the team's; signing out or revoking the token ends it.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { tokenStub } from "../durable/stubs";
import type { AppEnv } from "../env";
import type { Identity } from "./access";
import { isOneOfSecrets, sha256Hex } from "../lib/secrets";
import { isBootstrap } from "../lib/identity";
import { bearerToken } from "./bearer";
import { ProblemError } from "@agent-runtime/protocol/problems";

export const SIGNIN_COOKIE = "ar_signin";
/** A sign-in lasts this long (or until its token expires, if sooner). */
export const SIGNIN_TTL_MS = 30 * 86_400_000;
/** Cookie-authenticated requests that change something must carry this header: a cross-site form cannot. */
export const CSRF_HEADER = "x-agent-runtime-csrf";

const COOKIE_FORMAT = /^([A-Za-z0-9_-]{1,80})\.([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$/;

function randomText(bytes: number, encoding: "hex" | "base64url"): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  if (encoding === "hex") return [...raw].map((b) => b.toString(16).padStart(2, "0")).join("");
  return btoa(String.fromCharCode(...raw))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** The object that keeps an identity's sign-ins: its token's own, or one per bootstrap or Access identity. */
async function holderOf(identity: Identity): Promise<string> {
  if (identity.tokenId) return identity.tokenId;
  return `signin-${(await sha256Hex(`${identity.role}:${identity.name}`)).slice(0, 32)}`;
}

/**
 * A bootstrap admin's sign-in is bound to the API_TOKEN value it was made with (its SHA-256): once that
 * value is no longer configured (rotated out), the sign-in is refused at once. A sign-in made with the
 * cookie itself keeps its binding; a bootstrap identity with neither is not signed in.
 */
async function apiTokenBinding(c: Context<AppEnv>, identity: Identity, apiTokens: string[]): Promise<string | null> {
  if (!isBootstrap(identity)) return null;
  const presented = bearerToken(c.req.header("authorization"));
  if (presented && isOneOfSecrets(presented, apiTokens)) return sha256Hex(presented);
  const bound = c.get("apiTokenHash");
  if (bound) return bound;
  throw new ProblemError("invalid_request", "sign in with the API token itself (Authorization: Bearer <API_TOKEN>)");
}

/** Make a sign-in for the caller and set its cookie; answers when it expires. */
export async function signIn(c: Context<AppEnv>, identity: Identity, apiTokens: string[]): Promise<number> {
  const now = Date.now();
  const expiresAtMs = Math.min(now + SIGNIN_TTL_MS, identity.expiresAtMs ?? Number.POSITIVE_INFINITY);
  const apiTokenHash = await apiTokenBinding(c, identity, apiTokens);
  const holder = await holderOf(identity);
  const id = randomText(16, "hex");
  const secret = randomText(32, "base64url");
  await tokenStub(c.env, holder).openSignin(id, await sha256Hex(secret), identity, now, expiresAtMs, apiTokenHash);
  setCookie(c, SIGNIN_COOKIE, `${holder}.${id}.${secret}`, {
    httpOnly: true,
    // Browsers keep Secure cookies on http://localhost and 127.0.0.1 too (a potentially trustworthy origin).
    secure: true,
    sameSite: "Strict",
    path: "/",
    maxAge: Math.floor((expiresAtMs - now) / 1000),
  });
  return expiresAtMs;
}

type CookieVerdict = { ok: true; identity: Identity } | { ok: false; detail: string };

/** The SHA-256 of each configured API_TOKEN, computed once per isolate. */
const apiTokenHashes = new Map<string, Promise<string>>();

async function stillConfigured(apiTokens: string[], hash: string): Promise<boolean> {
  const hashes = await Promise.all(
    apiTokens.map((token) => {
      const known = apiTokenHashes.get(token) ?? sha256Hex(token);
      apiTokenHashes.set(token, known);
      return known;
    }),
  );
  return isOneOfSecrets(hash, hashes);
}

/** The identity of the request's sign-in cookie; null when there is none. */
export async function cookieIdentity(c: Context<AppEnv>, apiTokens: string[]): Promise<CookieVerdict | null> {
  const value = getCookie(c, SIGNIN_COOKIE);
  if (!value) return null;
  const match = COOKIE_FORMAT.exec(value);
  if (!match) return { ok: false, detail: "the sign-in cookie is not valid; sign in again" };
  const check = await tokenStub(c.env, match[1]!).checkSignin(match[2]!, await sha256Hex(match[3]!), Date.now());
  if (!check.ok) return { ok: false, detail: check.reason };
  if (isBootstrap(check.identity)) {
    // Made with an API_TOKEN value that has since been rotated out (or before sign-ins were bound to one).
    if (!check.apiTokenHash || !(await stillConfigured(apiTokens, check.apiTokenHash)))
      return { ok: false, detail: "the API_TOKEN this sign-in was made with is no longer configured; sign in again" };
    c.set("apiTokenHash", check.apiTokenHash);
  }
  return { ok: true, identity: check.identity };
}

/** End the request's sign-in (its object forgets it) and clear the cookie. */
export async function signOut(c: Context<AppEnv>): Promise<void> {
  const match = COOKIE_FORMAT.exec(getCookie(c, SIGNIN_COOKIE) ?? "");
  if (match) await tokenStub(c.env, match[1]!).closeSignin(match[2]!);
  deleteCookie(c, SIGNIN_COOKIE, { path: "/", secure: true, httpOnly: true, sameSite: "Strict" });
}
