/**
 * The sidecar package, served by the worker itself (docs/architecture.md, "Connecting a machine"): the
 * connect command installs from here, so it works from any deployment, before and without any registry
 * publication, and the sidecar is always the version this worker was released with. Public, like the
 * dashboard page: the package holds no secret.
 */
import type { Context } from "hono";
import { notFound } from "../lib/problem-response";
import { SIDECAR_TARBALL } from "../sidecar-package.generated";

const bytes = Uint8Array.from(atob(SIDECAR_TARBALL.base64), (c) => c.charCodeAt(0));

/** Where this worker serves its sidecar package. */
export function sidecarPackageUrl(origin: string): string {
  return `${origin}/v1/sidecar/${SIDECAR_TARBALL.name}`;
}

export function sidecarPackage(c: Context): Response {
  if (c.req.param("file") !== SIDECAR_TARBALL.name) return notFound(c);
  return c.body(bytes, 200, {
    "content-type": "application/octet-stream",
    "content-length": String(bytes.length),
    "cache-control": "public, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
  });
}
