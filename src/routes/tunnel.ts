/**
 * Where sidecars dial in. The machine token is checked here, before the upgrade reaches the
 * machine's Durable Object: a forged, foreign or expired token never opens a socket. The object itself
 * then refuses a token of a revoked generation. Every refusal is audited (docs/architecture.md, "Trust").
 */
import { Hono } from "hono";
import { locationHintFor, machineObject } from "../durable/stubs";
import type { AppEnv } from "../env";
import { settings } from "../settings";
import { rememberMachine } from "../http/access";
import { recordAudit } from "../http/audit";
import { bearerToken } from "../http/bearer";
import { problem } from "../lib/problem-response";
import { overloadRefusal } from "../http/overload";
import { verifyMachineToken } from "@agent-runtime/protocol/machine-token";
import { Identifier } from "@agent-runtime/protocol/values";

export const tunnelRoutes = new Hono<AppEnv>().get("/_tunnel/:machine", async function acceptTunnel(c) {
  const machine = c.req.param("machine");
  if (!Identifier.safeParse(machine).success) return problem("invalid_request", "not a machine id");
  const token = bearerToken(c.req.header("authorization"));
  const check = token ? await verifyMachineToken(settings(c.env).tunnelSecret, machine, token) : null;
  const who = { token: `machine token of '${machine}'${check?.ok ? ` (generation ${check.claims.generation})` : ""}`, role: null };
  if (!check?.ok) {
    recordAudit(c, { ...who, status: 401 });
    return problem("token_invalid", check?.reason ?? `send the machine token of '${machine}' as 'Authorization: Bearer <token>'`);
  }
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    return problem("invalid_request", "expected a WebSocket upgrade", undefined);
  }
  const headers = new Headers(c.req.raw.headers);
  headers.set("x-machine-id", machine);
  headers.set("x-token-generation", String(check.claims.generation));
  headers.delete("authorization"); // the Durable Object never needs the secret
  const continent = c.req.raw.cf?.continent;
  let res: Response;
  try {
    res = await machineObject(c.env, machine, locationHintFor(continent)).fetch(new Request(c.req.url, { headers }));
  } catch (err) {
    // Under load the sidecar is told when to come back rather than left to guess (http/overload.ts).
    const busy = overloadRefusal(err, `machine '${machine}''s object`);
    if (busy) return busy;
    throw err;
  }
  if (res.status === 401) recordAudit(c, { ...who, status: 401 }); // a revoked generation
  if (res.status === 101) rememberMachine(machine);
  return res;
});
