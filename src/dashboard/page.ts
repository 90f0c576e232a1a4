import type { Context } from "hono";
import { acceptsGzip, prefers } from "../http/negotiation";
import { notFound } from "../lib/problem-response";
import { APP_PRELOADS, APP_SCRIPT, APP_STYLE, ASSETS, STATIC } from "./assets.generated";
import template from "./index.html";

/** The page, with the names of this build's assets (their content hash changes when they do). */
const page = template
  .replace("{{SCRIPT}}", APP_SCRIPT)
  .replace("{{STYLE}}", APP_STYLE)
  .replace("{{PRELOADS}}", APP_PRELOADS.map((href) => `<link rel="modulepreload" href="${href}">`).join("\n"));

/**
 * The addresses of the dashboard's views (src/dashboard/client/router.ts): each serves the same page,
 * which shows the view its address names. None is under /v1 or /acp, and none is /machines/<id>/v1.
 */
export const DASHBOARD_PATHS = [
  "/",
  "/sessions",
  "/sessions/:id",
  "/sessions/:id/changes",
  "/machines",
  "/machines/:machine",
  ...["agents", "processes", "files", "terminal", "ports"].map((tab) => `/machines/:machine/${tab}`),
  "/tasks",
  "/team",
  "/admin",
];

/**
 * The dashboard: one static page and its bundled script (Preact views, xterm.js, marked, DOMPurify). It
 * holds no data and needs no token to load; everything it shows it fetches with the sign-in cookie.
 * No inline script runs (script-src 'self'); xterm.js sets inline styles, hence style-src's inline.
 */
export function dashboard(c: Context): Response {
  return pageResponse(c, 200);
}

function pageResponse(c: Context, status: 200 | 404): Response {
  return c.html(page, status, {
    "content-security-policy":
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
  });
}

/** The dashboard's bundled scripts and style: named by content, so cached for good; gzipped when the browser takes it. */
export function dashboardAsset(c: Context): Response {
  const asset = ASSETS[c.req.param("name") ?? ""];
  if (!asset) return notFound(c);
  const headers = {
    "content-type": asset.type,
    "cache-control": "public, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    vary: "accept-encoding",
  };
  if (!acceptsGzip(c.req.header("accept-encoding"))) return c.body(asset.body, 200, headers);
  // Compressed at build time; `encodeBody: "manual"` sends these bytes as they are, with their encoding.
  return new Response(gzipped(asset), { status: 200, headers: { ...headers, "content-encoding": "gzip" }, encodeBody: "manual" });
}

const decodedGzip = new WeakMap<object, Uint8Array>();

function gzipped(asset: { gzip: string }): Uint8Array {
  let bytes = decodedGzip.get(asset);
  if (!bytes) {
    bytes = Uint8Array.from(atob(asset.gzip), (ch) => ch.charCodeAt(0));
    decodedGzip.set(asset, bytes);
  }
  return bytes;
}

/** The service worker, the web app manifest and the icon: at fixed names, so revalidated rather than cached for good. */
export function dashboardStatic(c: Context): Response {
  const file = STATIC[new URL(c.req.url).pathname.slice(1)];
  if (!file) return notFound(c);
  return c.body(file.body, 200, { "content-type": file.type, "cache-control": "no-cache", "x-content-type-options": "nosniff" });
}

/**
 * An unknown address: a browser that navigated there gets the dashboard, which says nothing is there and
 * links back (404 all the same); an API client gets the problem, as for any unknown route.
 */
export function pageOrProblem(c: Context, problem: (c: Context) => Response): Response {
  const path = new URL(c.req.url).pathname;
  const api = path.startsWith("/v1/") || path === "/acp" || /^\/machines\/[^/]+\/(v1\/|acp$)/.test(path);
  if (c.req.method === "GET" && !api && prefers(c.req.header("accept"), "text/html", "application/json")) return pageResponse(c, 404);
  return problem(c);
}
