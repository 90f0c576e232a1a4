import type { Context } from "hono";
import type { AppEnv } from "../env";
import { prefers } from "../http/negotiation";
import { staticFile } from "../http/static-files";

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
  ...["policy", "skills", "mcp", "agents", "notifications"].map((tab) => `/team/${tab}`),
  "/admin",
];

/** The files at fixed names beside the page: the service worker (its address is its scope), the manifest, the icon. */
export const DASHBOARD_FILES = ["/sw.js", "/manifest.webmanifest", "/icon.svg"];

/**
 * The page's headers. No inline script runs (script-src 'self'); xterm.js sets inline styles, hence style-src's
 * inline. `no-cache`: revalidated on every visit (it names this build's scripts), answered 304 when unchanged.
 */
const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

/**
 * The dashboard's page at a view's address. The page and its files are static files (http/static-files.ts),
 * asked for by these routes only: a preview's host is answered before any of them and never gets the dashboard.
 */
export function dashboard(c: Context<AppEnv>): Promise<Response> {
  return staticFile(c, "/", PAGE_HEADERS);
}

/** A script or the style: named by content, so cached for good. */
export function dashboardAsset(c: Context<AppEnv>): Promise<Response> {
  return staticFile(c, `/assets/${c.req.param("name") ?? ""}`, { "cache-control": "public, max-age=31536000, immutable" });
}

/** The service worker, the manifest, the icon: at fixed names, so revalidated rather than cached for good. */
export function dashboardFile(c: Context<AppEnv>): Promise<Response> {
  return staticFile(c, new URL(c.req.url).pathname, { "cache-control": "no-cache" });
}

/**
 * An unknown address: a browser that navigated there gets the dashboard, which says nothing is there and
 * links back (404 all the same); an API client gets the problem, as for any unknown route.
 */
export async function pageOrProblem(c: Context<AppEnv>, problem: (c: Context<AppEnv>) => Response): Promise<Response> {
  const path = new URL(c.req.url).pathname;
  const api = path.startsWith("/v1/") || path === "/acp" || /^\/machines\/[^/]+\/(v1\/|acp$)/.test(path);
  if (c.req.method === "GET" && !api && prefers(c.req.header("accept"), "text/html", "application/json")) return staticFile(c, "/", PAGE_HEADERS, 404);
  return problem(c);
}
