/**
 * Optional Cloudflare Access in front of the worker: Access signs each request's
 * `Cf-Access-Jwt-Assertion` (RS256); we check it against the team's published keys (fetched and
 * cached by jose), the application's audience and the issuer, then give the email the role that
 * CF_ACCESS_ROLES names. An email with no role is refused: being let through Access is not enough.
 */
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from "jose";
import type { WorkerSettings } from "../settings";
import { Role } from "@agent-runtime/protocol/trust";
import type { Identity } from "./access";

/** One key set per certificate URL for the life of the isolate: jose caches the keys and refetches on an unknown `kid`. */
const keySets = new Map<string, JWTVerifyGetKey>();
function keySet(url: string): JWTVerifyGetKey {
  let set = keySets.get(url);
  if (!set) {
    set = createRemoteJWKSet(new URL(url), { cacheMaxAge: 10 * 60_000, cooldownDuration: 30_000 });
    keySets.set(url, set);
  }
  return set;
}

/** The role an email gets: an exact `email=role` entry wins over a `*@domain=role` one. */
export function roleForEmail(rules: string | undefined, email: string): Role | null {
  const lower = email.toLowerCase();
  let domainRole: Role | null = null;
  for (const pair of (rules ?? "").split(",")) {
    const [who, role] = pair.split("=").map((s) => s.trim().toLowerCase());
    const parsed = Role.safeParse(role);
    if (!who || !parsed.success) continue;
    if (who === lower) return parsed.data;
    if (who.startsWith("*@") && lower.endsWith(who.slice(1))) domainRole ??= parsed.data;
  }
  return domainRole;
}

export async function accessIdentity(
  access: NonNullable<WorkerSettings["access"]>,
  assertion: string,
): Promise<{ ok: true; identity: Identity } | { ok: false; detail: string; presented: string }> {
  let email: unknown;
  let expiresAtMs: number | null = null;
  try {
    const { payload } = await jwtVerify(assertion, keySet(access.certsUrl), { audience: access.audience, issuer: access.issuer, algorithms: ["RS256"] });
    email = payload.email;
    expiresAtMs = typeof payload.exp === "number" ? payload.exp * 1000 : null;
  } catch (err) {
    return {
      ok: false,
      detail: `the Cloudflare Access assertion is not valid (${err instanceof Error ? err.message : "unreadable"})`,
      presented: "(Access assertion)",
    };
  }
  if (typeof email !== "string" || !email.includes("@"))
    return { ok: false, detail: "the Cloudflare Access assertion names no email", presented: "(Access assertion)" };
  const role = roleForEmail(access.roles ?? undefined, email);
  if (!role) return { ok: false, detail: `${email} has no role here (CF_ACCESS_ROLES)`, presented: email };
  return { ok: true, identity: { name: email, role, machines: "*", tokenId: null, expiresAtMs } };
}
