import type { Context } from "hono";
import page from "./index.html";

/**
 * The dashboard: one static page. It holds no data and needs no token to load; everything it shows
 * it fetches with the API token the person enters (kept in that browser tab only).
 */
export function dashboard(c: Context): Response {
  return c.html(page, 200, {
    "content-security-policy":
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
  });
}
