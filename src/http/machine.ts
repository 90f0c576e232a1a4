import type { Context } from "hono";
import type { CallOutcome } from "../durable/machine/machine";
import type { AppEnv, Env } from "../env";
import { type OpArgs, type OpName, type OpResult, parseOpResult } from "@agent-runtime/protocol/ops";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { Caller } from "../durable/acp-transport/ownership";
import type { Identity } from "../lib/identity";

/**
 * Machine objects' ids by name, kept per isolate (and per namespace binding): `idFromName` derives the id
 * from the name at every call, and every relayed message asks for its machine's. An id is a pure
 * function of the name, never an I/O object, so it may outlive the request; bounded like the guard's memory.
 */
const machineIds = new WeakMap<object, Map<string, DurableObjectId>>();

function machineIdOf(namespace: Env["MACHINE"], machine: string): DurableObjectId {
  let ids = machineIds.get(namespace);
  if (!ids) {
    ids = new Map();
    machineIds.set(namespace, ids);
  }
  let id = ids.get(machine);
  if (!id) {
    if (ids.size >= 10_000) ids.clear();
    id = namespace.idFromName(machine);
    ids.set(machine, id);
  }
  return id;
}

/** The machine of this request, as the route's guard resolved and checked it (http/access.ts). */
export function machineStub(c: Context<AppEnv>) {
  const machine = c.get("machine");
  if (!machine) throw new Error(`${c.req.method} ${c.req.path} reached a machine without declaring it (declare(..., { machine: true }))`);
  return machineStubOf(c.env, machine);
}

/** A machine's object by its name, the guard having checked the caller may reach it. */
export function machineStubOf(env: Env, machine: string) {
  return env.MACHINE.get(machineIdOf(env.MACHINE, machine));
}

/**
 * Who this request is, as the machine's object keeps it: the owner of what it opens (an `/acp` connection)
 * and the holder of any stream it opens, which ends when that token is revoked or expires.
 */
export function callerOf(c: Context<AppEnv>): Caller {
  return callerOfIdentity(c.get("identity"));
}

export function callerOfIdentity({ tokenId, name, role, expiresAtMs }: Identity): Caller {
  return { tokenId, name, role, expiresAtMs };
}

/**
 * Call an operation on the request's machine; a refusal or fault comes back as a thrown ProblemError.
 * It waits the operation's deadline (OPS), unless a setting or the request says otherwise (`timeoutMs`).
 */
export async function relay<N extends OpName>(c: Context<AppEnv>, op: N, args: OpArgs<N>, timeoutMs?: number): Promise<OpResult<N>> {
  return parsedAnswer(op, await machineStub(c).call(op, args, timeoutMs));
}

/**
 * The machine's object's answer for `op`, parsed: an RPC stub cannot carry a method's type parameter (the
 * answer would read as `any`), so what comes back across the RPC boundary is parsed against the
 * operation's result schema again, never cast.
 */
export function parsedAnswer<N extends OpName>(op: N, outcome: CallOutcome<unknown>): OpResult<N> {
  const result = parseOpResult(op, settled(outcome));
  if (!result.ok) throw new ProblemError("internal", `the machine's object answered ${op} with what the operation table refuses (${result.error})`);
  return result.value;
}

/** An outcome of the machine's object as its value, or its problem thrown (routes fail one way: they throw). */
export function settled<T>(outcome: CallOutcome<T>): T {
  if (!outcome.ok) throw new ProblemError(outcome.problem.code, outcome.problem.detail, outcome.problem.extensions);
  return outcome.value;
}
