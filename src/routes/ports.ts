/**
 * The machine's ports (docs/previews.md, "Preview your app"): what listens, and opening one in a browser. Opening
 * needs the member role on the machine and is audited here, once per visit; the requests of the visit are
 * served by the preview routes (routes/preview.ts) on the pass this call makes.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { callerOf, machineStub } from "../http/machine";
import { json } from "../http/openapi";
import { relayRoute, withRelayRoutes } from "../http/relay-route";
import { settings } from "../settings";
import { previewLabel } from "@agent-runtime/protocol/preview";
import { GRANT_PATH } from "./preview";

const PortParams = z.object({ port: z.coerce.number().int().min(1).max(65_535) });

export const PreviewOpened = z
  .object({
    url: z.string().describe("open this in a browser: the preview's own origin (host mode) or a path of this origin with its pass (path mode)"),
    mode: z.enum(["host", "path"]).describe("host: the app at the root of its own origin (PREVIEW_DOMAIN); path: under /machines/{machine}/ports/{port}/"),
    expiresAtMs: z.number().int().describe("host mode: the link works once, until then; path mode: the pass ends then"),
  })
  .meta({ id: "PreviewOpened" });

const open = apiRoute("post", "/ports/{port}/preview", {
  summary: "Open a port of the machine in a browser: a link to the app (the sidecar serves only ports its owner exposed with --expose-ports)",
  access: { role: "member", machine: true },
  request: { params: PortParams },
  answers: { 201: json(PreviewOpened, "where to open it") },
  problems: ["machine_offline", "timeout", "conflict"],
});

export const portRoutes = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
  relayRoute("get", "/ports", {
    summary: "The machine's listening TCP ports, with their process, the runtime's process or session that owns it, and whether its owner exposed it",
    access: { role: "viewer", machine: true },
    op: "ports.list",
    answer: { status: 200, description: "listening ports" },
  }),
]).openapi(open, async function openPreview(c) {
  const { port } = c.req.valid("param");
  const machine = c.get("machine");
  const domain = settings(c.env).previewDomain;
  const caller = callerOf(c);
  const holder = { tokenId: caller.tokenId, name: caller.name, expiresAtMs: caller.expiresAtMs };
  const here = new URL(c.req.url);
  if (domain) {
    const { secret, expiresAtMs } = await machineStub(c).mintPreview(port, holder, "grant");
    const origin = `${here.protocol}//${port}--${await previewLabel(machine)}.${domain}${here.port ? `:${here.port}` : ""}`;
    return c.json({ url: `${origin}${GRANT_PATH}?grant=${encodeURIComponent(`${machine}.${secret}`)}`, mode: "host" as const, expiresAtMs }, 201);
  }
  const { secret, expiresAtMs } = await machineStub(c).mintPreview(port, holder, "pass");
  return c.json({ url: `${here.origin}/machines/${encodeURIComponent(machine)}/ports/${port}/~${secret}/`, mode: "path" as const, expiresAtMs }, 201);
});
