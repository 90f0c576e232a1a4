/**
 * The sidecar package, served by the worker itself (docs/architecture.md, "Connecting a machine"): the
 * connect command installs from here, so it works from any deployment, before and without any registry
 * publication, and the sidecar is always the version this worker was released with. Public, like the
 * dashboard page: the package holds no secret.
 */
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { staticFile } from "../http/static-files";
import { notFound } from "../lib/problem-response";
import { SIDECAR_PACKAGE_NAME } from "../sidecar-package.generated";

/** Where this worker serves its sidecar package. */
export function sidecarPackageUrl(origin: string): string {
  return `${origin}/v1/sidecar/${SIDECAR_PACKAGE_NAME}`;
}

/** The tarball is one of the worker's static files (built by scripts/build.ts), not part of its bundle. */
export async function sidecarPackage(c: Context<AppEnv>): Promise<Response> {
  if (c.req.param("file") !== SIDECAR_PACKAGE_NAME) return notFound(c);
  return staticFile(c, `/sidecar/${SIDECAR_PACKAGE_NAME}`, {
    "content-type": "application/octet-stream",
    "cache-control": "public, max-age=31536000, immutable",
  });
}
