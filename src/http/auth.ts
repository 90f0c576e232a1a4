import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { timingSafeEqualText } from "../protocol/machine-token";
import { problem } from "./problem";

/** The bearer token of a request, or null when the header is missing or not `Bearer <token>`. */
export function bearerToken(header: string | undefined | null): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(header);
  return match?.[1] ?? null;
}

/** Every configured API token is compared (in constant time), so timing says nothing about which one matched. */
export function isApiToken(configured: string | undefined, presented: string | null): boolean {
  if (!presented || !configured) return false;
  let ok = false;
  for (const token of configured.split(",").map((t) => t.trim()).filter(Boolean)) {
    if (timingSafeEqualText(presented, token)) ok = true;
  }
  return ok;
}

export const requireApiToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = bearerToken(c.req.header("authorization"));
  if (!isApiToken(c.env.API_TOKEN, token)) {
    return problem("token_invalid", token ? "the bearer token is not valid" : "send 'Authorization: Bearer <API token>'");
  }
  await next();
};
