import type { Context } from "hono";
import { machineObject } from "../durable/stubs";
import type { CallOutcome } from "../durable/machine";
import type { AppEnv } from "../env";
import { settings } from "../settings";
import type { OpArgs, OpName, OpResult } from "@agent-runtime/protocol/frames";
import { ProblemError } from "@agent-runtime/protocol/problems";

/** The machine of this request, as the route's guard resolved and checked it (http/access.ts). */
export function machineStub(c: Context<AppEnv>) {
  const machine = c.get("machine");
  if (!machine) throw new Error(`${c.req.method} ${c.req.path} reached a machine without declaring it (declare(..., { machine: true }))`);
  return machineObject(c.env, machine);
}

export function acpTimeout(c: Context<AppEnv>): number {
  return settings(c.env).acpTimeoutMs;
}

/**
 * Call an operation on the request's machine; a refusal or fault comes back as a thrown ProblemError.
 * It waits the operation's deadline (OPS), unless a setting or the request says otherwise (`timeoutMs`).
 */
export async function relay<N extends OpName>(c: Context<AppEnv>, op: N, args: OpArgs<N>, timeoutMs?: number): Promise<OpResult<N>> {
  const stub = machineStub(c);
  // The machine object parsed the sidecar's answer against OPS[op].result; RPC stubs do not carry the
  // method's type parameter, so the outcome's type is restated here, not its data.
  return settled((await stub.call(op, args, timeoutMs)) as CallOutcome<OpResult<N>>);
}

/** An outcome of the machine's object as its value, or its problem thrown (routes fail one way: they throw). */
export function settled<T>(outcome: CallOutcome<T>): T {
  if (!outcome.ok) throw new ProblemError(outcome.problem.code, outcome.problem.detail, outcome.problem.extensions);
  return outcome.value;
}
