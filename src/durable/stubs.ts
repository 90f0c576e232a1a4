/**
 * How the worker reaches its Durable Objects, by name. Types only from the objects' modules, so
 * that anything (including pure, fast-tested modules) can import this without the runtime.
 */
import type { Env } from "../env";
import type { MachineObject } from "./machine/machine";
import type { TeamObject } from "./team/team";
import type { TokenObject } from "./tokens/token";

/** The one object of the team: machines registry, tokens index, audit log, team configuration. */
export function teamStub(env: Env): DurableObjectStub<TeamObject> {
  return env.TEAM.get(env.TEAM.idFromName("team"));
}

/** The object that decides whether one issued API token is valid. */
export function tokenStub(env: Env, id: string): DurableObjectStub<TokenObject> {
  return env.TOKEN.get(env.TOKEN.idFromName(id));
}

/**
 * The object holding one machine's tunnel. Only the tunnel route passes a location hint: a machine's
 * object is created by its sidecar's first connection, near where that sidecar connects from.
 */
export function machineObject(env: Env, machine: string, locationHint?: DurableObjectLocationHint): DurableObjectStub<MachineObject> {
  return env.MACHINE.get(env.MACHINE.idFromName(machine), locationHint ? { locationHint } : undefined);
}

/** Where a Durable Object should be created for a client on this continent (Cloudflare's `request.cf.continent`). */
export function locationHintFor(continent: unknown): DurableObjectLocationHint | undefined {
  const hints: Record<string, DurableObjectLocationHint> = { NA: "enam", SA: "sam", EU: "weur", AS: "apac", OC: "oc", AF: "afr" };
  return typeof continent === "string" ? hints[continent] : undefined;
}
