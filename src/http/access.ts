/**
 * Who may do what (docs/architecture.md, "Trust"). Every route declares the role it needs and whether it
 * acts on a machine; `declare` turns that into the route's middleware and into its OpenAPI entry, so
 * the document and the check can never disagree.
 */
import type { RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AppEnv, Env } from "../env";
import { settings } from "../settings";
import { teamStub } from "../durable/stubs";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { type MachineScope, type Role, roleAllows } from "@agent-runtime/protocol/trust";
import { Identifier } from "@agent-runtime/protocol/values";
import { machineOfSession, SessionId } from "@agent-runtime/protocol/sessions";
import { machineOfTask, TaskId } from "@agent-runtime/protocol/tasks";

import type { Identity } from "../lib/identity";

export type { Identity };

export { roleAllows } from "@agent-runtime/protocol/trust";

export function scopeAllows(machines: MachineScope, machine: string): boolean {
  return machines === "*" || machines.includes(machine);
}

export { scopeCovers } from "@agent-runtime/protocol/trust";

/**
 * What a route needs: a role, and whether it acts on one machine (then the machine must be in the token's
 * scope). `"session"` and `"task"`: the machine is the one the path's id names (`/v1/sessions/{id}`,
 * `/v1/tasks/{id}`); `"body"`: the one the JSON body's `machine` names, else as the path says (`POST /v1/tasks`).
 */
export interface Access {
  role: Role;
  machine: boolean | "session" | "task" | "body";
  /**
   * For the team documents' routes: with `?directory=` they act on that folder of one machine instead
   * of on the team's document (as the sandbox-agent SDK calls them), and need this instead.
   */
  withDirectory?: { role: Role; machine: true };
  /**
   * The route acts on every machine at once (the team's documents reach all of them): a token whose scope
   * is a list of machines may not use it, whatever its role.
   */
  everyMachine?: boolean;
}

/**
 * Which machine a request is for: `/machines/{machine}/v1/...` names it; plain `/v1/...` means
 * DEFAULT_MACHINE. There is no guessing ("the only connected one"): a machine nobody named is never used.
 */
export async function resolveMachine(c: Parameters<MiddlewareHandler<AppEnv>>[0]): Promise<string> {
  const named = c.req.param("machine");
  if (named !== undefined) {
    // A machine this isolate knows was read as an id when it first came (a sidecar's tunnel, the team's registry).
    if (knownMachines.has(named)) return named;
    if (!Identifier.safeParse(named).success) throw new ProblemError("invalid_request", `'${named.slice(0, 64)}' is not a machine id`);
    return named;
  }
  const defaultMachine = settings(c.env).defaultMachine;
  if (defaultMachine) return defaultMachine;
  // Only on this error path is the team asked: the list helps the caller pick.
  const machines = (await teamStub(c.env).listMachines({ limit: 50 })).machines.map((m) => m.id);
  throw new ProblemError(
    "invalid_request",
    `no machine named: address one as /machines/{machine}/v1/... (or set DEFAULT_MACHINE on the worker)${machines.length ? `; known machines: ${machines.join(", ")}` : ""}`,
    { machines },
  );
}

/** The machine an id in the path names (a session's, a task's); under `/machines/{machine}/v1` it must be that one. */
function idMachine(c: Parameters<MiddlewareHandler<AppEnv>>[0], kind: "session" | "task"): string {
  const id = c.req.param("id") ?? "";
  const [schema, machineOf, form] = kind === "session" ? [SessionId, machineOfSession, "ses"] : [TaskId, machineOfTask, "task"];
  if (!schema.safeParse(id).success) throw new ProblemError("invalid_request", `'${id.slice(0, 64)}' is not a ${kind} id (${form}-<16 hex>-<machine>)`);
  const machine = machineOf(id);
  const named = c.req.param("machine");
  if (named !== undefined && named !== machine) throw new ProblemError("not_found", `${kind} '${id}' is not on machine '${named}'`);
  return machine;
}

/** The machine a JSON body names (`{"machine": …}`), else the one the path does; both, and different, is a mistake. */
async function bodyMachine(c: Parameters<MiddlewareHandler<AppEnv>>[0]): Promise<string> {
  // Hono keeps the parsed body: the route's own validation reads it again without reading the stream twice.
  const body: unknown = await c.req.json().catch(() => null);
  const named = typeof body === "object" && body !== null && "machine" in body ? body.machine : undefined;
  if (named === undefined) return resolveMachine(c);
  if (typeof named !== "string" || !Identifier.safeParse(named).success) throw new ProblemError("invalid_request", "`machine` is not a machine id");
  const inPath = c.req.param("machine");
  if (inPath !== undefined && inPath !== named) throw new ProblemError("invalid_request", `the body names machine '${named}', the path '${inPath}'`);
  return named;
}

/**
 * Has this machine's sidecar ever connected? Only a sidecar's tunnel creates a machine's object, so a
 * client's typo must not: the answer comes from the team's registry, remembered by this isolate (a
 * machine, once known, stays known; an unknown id is asked again after two seconds, or at once when a
 * sidecar connects through this isolate). Known machines, the per-request case, never reach the team
 * object twice.
 */
const knownMachines = new Set<string>();
const unknownUntil = new Map<string, number>();
const UNKNOWN_MEMORY_MS = 2_000;

/** The tunnel route calls this when a sidecar's connection was accepted: its machine exists from now on. */
export function rememberMachine(machine: string): void {
  knownMachines.add(machine);
  unknownUntil.delete(machine);
}

/** Known to this isolate already (a sidecar's tunnel came through it, or the team's registry said so): no one need be asked. */
export function machineKnownHere(machine: string): boolean {
  return knownMachines.has(machine);
}

export async function machineKnown(env: Env, machine: string): Promise<boolean> {
  if (machineKnownHere(machine)) return true;
  const now = Date.now();
  if ((unknownUntil.get(machine) ?? 0) > now) return false;
  if (await teamStub(env).machineExists(machine)) {
    knownMachines.add(machine);
    unknownUntil.delete(machine);
    return true;
  }
  if (unknownUntil.size > 10_000) unknownUntil.clear(); // bounded: a flood of made-up ids cannot grow it
  unknownUntil.set(machine, now + UNKNOWN_MEMORY_MS);
  return false;
}

/** The refusal of a machine outside the caller's scope. */
export function outOfScope(identity: { name: string; machines: MachineScope }, machine: string): ProblemError {
  return new ProblemError("permission_denied", `the token '${identity.name}' may not reach machine '${machine}'`, { machine, scope: identity.machines });
}

/**
 * For a route whose machine is named by its body or by a record (a schedule's or a trigger's task): the
 * machine must be in the caller's scope and, with `known`, one that has connected. It is the audit line's machine.
 */
export async function reachMachine(c: Parameters<MiddlewareHandler<AppEnv>>[0], machine: string, known = false): Promise<void> {
  c.set("machine", machine);
  if (!scopeAllows(c.get("identity").machines, machine)) throw outOfScope(c.get("identity"), machine);
  if (known && !(await machineKnown(c.env, machine)))
    throw new ProblemError("not_found", `no machine '${machine}' has ever connected to this deployment`, { machine });
}

/** What a schedule or a trigger starts: a task on one machine, or an attempt group that may name others. */
export interface StartsTasks {
  task: { machine: string };
  attempts?: { attempts: { machine?: string | undefined }[] } | null | undefined;
}

/**
 * For a route that keeps what starts tasks (a schedule, a trigger): every machine it names must be in the
 * caller's scope and have connected, its attempt group's and then its task's (the audit line's machine).
 */
export async function reachTaskMachines(c: Parameters<MiddlewareHandler<AppEnv>>[0], request: StartsTasks): Promise<void> {
  for (const attempt of request.attempts?.attempts ?? []) if (attempt.machine) await reachMachine(c, attempt.machine, true);
  await reachMachine(c, request.task.machine, true);
}

/** A record kept for its task's machine (a schedule, a trigger): one of a machine outside the caller's scope is as good as absent (404). */
export function inTaskScope<T extends StartsTasks>(c: Parameters<MiddlewareHandler<AppEnv>>[0], record: T | null, absent: string): T {
  if (!record || !scopeAllows(c.get("identity").machines, record.task.machine)) throw new ProblemError("not_found", absent);
  return record;
}

/** The machines a list asks (sessions, tasks): the one named, when in scope and known, else every machine in scope that has records. */
export async function machinesToList(c: Parameters<MiddlewareHandler<AppEnv>>[0], named: string | undefined): Promise<string[]> {
  if (named === undefined) return teamStub(c.env).machinesWithSessions(c.get("identity").machines);
  await reachMachine(c, named, true);
  return [named];
}

/** The middleware of a route: the caller's role suffices, and its machine (resolved here, once) is in scope. */
export function guard(declared: Access): MiddlewareHandler<AppEnv> {
  return async function accessGuard(c, next) {
    const identity = c.get("identity");
    const access: Access = declared.withDirectory && c.req.query("directory") !== undefined ? declared.withDirectory : declared;
    // The machine first, so that a refusal is audited with the machine it was for.
    const machine =
      access.machine === "session" || access.machine === "task"
        ? idMachine(c, access.machine)
        : access.machine === "body"
          ? await bodyMachine(c)
          : access.machine
            ? await resolveMachine(c)
            : null;
    if (machine !== null) {
      c.set("machine", machine);
      if (!(await machineKnown(c.env, machine)))
        throw new ProblemError("not_found", `no machine '${machine}' has ever connected to this deployment`, { machine });
    }
    const refused = accessRefusal(identity, access, machine);
    if (refused) throw refused;
    await next();
  };
}

/**
 * The guard's verdict once the machine is resolved and known: the role, every machine where the route
 * needs it, the machine in the token's scope; the refusal, or null. The relay's message before Hono
 * (http/relay-post.ts) asks the same.
 */
export function accessRefusal(identity: Identity, access: Access, machine: string | null): ProblemError | null {
  if (!roleAllows(identity.role, access.role)) {
    return new ProblemError("permission_denied", `this needs the role '${access.role}'; the token '${identity.name}' is '${identity.role}'`, {
      requiredRole: access.role,
      role: identity.role,
    });
  }
  if (access.everyMachine && identity.machines !== "*") {
    return new ProblemError("permission_denied", `this reaches every machine; the token '${identity.name}' is limited to ${identity.machines.join(", ")}`, {
      scope: identity.machines,
    });
  }
  if (machine !== null && !scopeAllows(identity.machines, machine)) return outOfScope(identity, machine);
  return null;
}

/**
 * A route with its access declared, for `createRoute(declare(access, {...}))`: the guard runs before
 * validation, and the OpenAPI operation carries `x-required-role`, `x-machine-scoped` and a sentence saying so.
 */
export function declare<R extends RouteConfig>(access: Access, route: R): R & { middleware: MiddlewareHandler<AppEnv> } {
  return {
    ...route,
    middleware: guard(access),
    description: `${route.description ? `${route.description}\n\n` : ""}Needs the role \`${access.role}\`${access.machine ? " and the machine in the token's scope" : ""}${
      access.everyMachine ? " with every machine in the token's scope (`*`)" : ""
    }${access.withDirectory ? `; with \`directory\`, the role \`${access.withDirectory.role}\` and the machine in the token's scope` : ""}.`,
    "x-required-role": access.role,
    "x-machine-scoped": access.machine !== false,
    ...(access.everyMachine ? { "x-every-machine": true } : {}),
    ...(access.withDirectory ? { "x-with-directory": { "x-required-role": access.withDirectory.role, "x-machine-scoped": true } } : {}),
  };
}
