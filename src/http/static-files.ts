import type { Context } from "hono";
import type { AppEnv } from "../env";
import { notFound } from "../lib/problem-response";
import { acceptsGzip } from "./negotiation";

/** What a browser would have compressed: pages, scripts, styles, the manifest, the icon. */
const COMPRESSIBLE = /^(text\/|application\/(javascript|json|manifest\+json)|image\/svg\+xml)/;

/**
 * One of the worker's static files (Workers Static Assets, the ASSETS binding: dist/static/, built by
 * scripts/build.ts; docs/architecture.md, "Static files"), answered with the calling route's headers, which
 * win over the asset's. The worker runs first for every request, so a file is only ever served by a route
 * that asked for it: a preview's host never gets one.
 *
 * A conditional request is passed on, so an unchanged file is a 304 (unless `status` is 404, which must stay).
 * Compression: a deployment's assets come compressed and pass through as they are; a file that arrives plain
 * (Miniflare's assets under `npm start`) is marked gzip and workerd compresses it on the way out, so a first
 * visit on this machine downloads what it would from a deployment.
 */
export async function staticFile(c: Context<AppEnv>, path: string, headers: Record<string, string>, status: 200 | 404 = 200): Promise<Response> {
  const ask = new Headers();
  for (const name of ["accept-encoding", ...(status === 200 ? ["if-none-match", "if-modified-since"] : [])]) {
    const value = c.req.header(name);
    if (value) ask.set(name, value);
  }
  const found = await c.env.ASSETS.fetch(new Request(new URL(path, c.req.url), { headers: ask }));
  if (found.status !== 200 && found.status !== 304) {
    await found.body?.cancel();
    return notFound(c);
  }
  const out = new Headers(found.headers);
  for (const [name, value] of Object.entries(headers)) out.set(name, value);
  out.set("x-content-type-options", "nosniff");
  const compressible = COMPRESSIBLE.test(out.get("content-type") ?? "");
  if (compressible && !/accept-encoding/i.test(out.get("vary") ?? "")) out.append("vary", "accept-encoding");
  if (found.status === 200 && compressible && !out.has("content-encoding") && acceptsGzip(c.req.header("accept-encoding"))) {
    out.set("content-encoding", "gzip");
    out.delete("content-length");
  }
  return new Response(found.status === 304 ? null : found.body, { status: found.status === 304 ? 304 : status, headers: out });
}
