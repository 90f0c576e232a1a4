/**
 * The sandbox-agent SDK's desktop calls (screenshots, mouse, keyboard, recordings): a developer's machine
 * has its own desktop, which this runtime does not drive. Every such call is answered with one clear
 * problem instead of a 404 that looks like a mistake in the URL.
 */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { problem } from "../lib/problem-response";

export const desktopRoutes = new Hono<AppEnv>().all("/desktop/*", function refuseDesktop(c) {
  return problem(
    "not_implemented",
    `${c.req.method} ${new URL(c.req.url).pathname}: this runtime drives agents, processes and files on developer machines, not their desktop (which is the developer's own)`,
  );
});
