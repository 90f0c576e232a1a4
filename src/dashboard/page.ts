import type { Context } from "hono";
import { notFound } from "../http/problem";
import { ASSETS, MARKDOWN_SCRIPT, STATIC, TERMINAL_SCRIPT, TERMINAL_STYLE } from "./assets.generated";
import template from "./index.html";

/** The page, with the names of this build's assets (their content hash changes when they do). */
const page = template
  .replace("{{TERMINAL_SCRIPT}}", TERMINAL_SCRIPT)
  .replace("{{TERMINAL_STYLE}}", TERMINAL_STYLE)
  .replace("{{MARKDOWN_SCRIPT}}", MARKDOWN_SCRIPT);

/**
 * The dashboard: one static page. It holds no data and needs no token to load; everything it shows
 * it fetches with the API token the person enters (kept in that browser tab only). Its terminal is
 * xterm.js, bundled at build time and served below: nothing is loaded from elsewhere.
 */
export function dashboard(c: Context): Response {
  return c.html(page, 200, {
    "content-security-policy":
      "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
  });
}

/** The dashboard's bundled scripts and styles: named by content, so cached for good. */
export function dashboardAsset(c: Context): Response {
  const asset = ASSETS[c.req.param("name") ?? ""];
  if (!asset) return notFound(c);
  return c.body(asset.body, 200, { "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" });
}

/** The service worker, the web app manifest and the icon: at fixed names, so revalidated rather than cached for good. */
export function dashboardStatic(c: Context): Response {
  const file = STATIC[new URL(c.req.url).pathname.slice(1)];
  if (!file) return notFound(c);
  return c.body(file.body, 200, { "content-type": file.type, "cache-control": "no-cache", "x-content-type-options": "nosniff" });
}
