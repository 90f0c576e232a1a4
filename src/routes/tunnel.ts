/**
 * Where sidecars dial in. The machine token is checked here, before the upgrade reaches the
 * machine's Durable Object: a forged or foreign token never opens a socket.
 */
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { bearerToken } from "../http/auth";
import { problem } from "../http/problem";
import { verifyMachineToken } from "../protocol/machine-token";
import { Identifier } from "../protocol/resources";

export const tunnelRoutes = new Hono<AppEnv>().get("/_tunnel/:machine", async (c) => {
  const machine = c.req.param("machine");
  if (!Identifier.safeParse(machine).success) return problem("invalid_request", "not a machine id");
  const token = bearerToken(c.req.header("authorization"));
  if (!token || !(await verifyMachineToken(c.env.TUNNEL_SECRET, machine, token))) {
    return problem("token_invalid", `the machine token is not valid for machine '${machine}'`);
  }
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    return problem("invalid_request", "expected a WebSocket upgrade", undefined);
  }
  const headers = new Headers(c.req.raw.headers);
  headers.set("x-machine-id", machine);
  headers.delete("authorization"); // the Durable Object never needs the secret
  const stub = c.env.MACHINE.get(c.env.MACHINE.idFromName(machine));
  return stub.fetch(new Request(c.req.url, { headers }));
});
