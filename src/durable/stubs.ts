/**
 * How the worker reaches its Durable Objects, by name. Types only from the objects' modules, so
 * that anything (including pure, fast-tested modules) can import this without the runtime.
 */
import type { Env } from "../env";
import type { MachineObject } from "./machine";
import type { TeamObject } from "./team";
import type { TokenObject } from "./token";

/** The one object of the team: machines registry, tokens index, audit log, team configuration. */
export function teamStub(env: Env): DurableObjectStub<TeamObject> {
  return env.TEAM.get(env.TEAM.idFromName("team"));
}

/** The object that decides whether one issued API token is valid. */
export function tokenStub(env: Env, id: string): DurableObjectStub<TokenObject> {
  return env.TOKEN.get(env.TOKEN.idFromName(id));
}

/** The object holding one machine's tunnel. */
export function machineObject(env: Env, machine: string): DurableObjectStub<MachineObject> {
  return env.MACHINE.get(env.MACHINE.idFromName(machine));
}
