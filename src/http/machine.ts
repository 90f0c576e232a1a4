import type { Context } from "hono";
import type { CallOutcome } from "../durable/machine";
import { teamStub } from "../durable/team";
import { numberVar, type AppEnv } from "../env";
import type { OpArgs, OpName, OpResult } from "../protocol/frames";
import { LIMITS } from "../protocol/limits";
import { ProblemError } from "../protocol/problems";
import { Identifier } from "../protocol/resources";

/**
 * Which machine a request is for: `/machines/{machine}/v1/...` names it; plain `/v1/...` means
 * DEFAULT_MACHINE when set, else the only connected machine.
 */
export async function resolveMachine(c: Context<AppEnv>): Promise<string> {
  const named = c.req.param("machine");
  if (named !== undefined) {
    if (!Identifier.safeParse(named).success) throw new ProblemError("invalid_request", `'${named.slice(0, 64)}' is not a machine id`);
    return named;
  }
  if (c.env.DEFAULT_MACHINE) return c.env.DEFAULT_MACHINE;
  const connected = await teamStub(c.env).connectedMachineIds();
  if (connected.length === 1) return connected[0]!;
  if (connected.length === 0) throw new ProblemError("machine_offline", "no machine is connected");
  throw new ProblemError("conflict", `several machines are connected (${connected.join(", ")}): address one as /machines/{machine}/v1/...`, {
    machines: connected,
  });
}

export async function machineStub(c: Context<AppEnv>) {
  const machine = await resolveMachine(c);
  return c.env.MACHINE.get(c.env.MACHINE.idFromName(machine));
}

/** How long a machine has to answer an operation that is not an agent's turn (those set their own). */
const DEFAULT_CALL_TIMEOUT_MS = 60_000;

export function acpTimeout(c: Context<AppEnv>): number {
  return numberVar(c.env.ACP_TIMEOUT_MS, LIMITS.acpTimeoutMs);
}

/** Call an operation on the request's machine; a refusal or fault comes back as a thrown ProblemError. */
export async function relay<N extends OpName>(c: Context<AppEnv>, op: N, args: OpArgs<N>, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<OpResult<N>> {
  const stub = await machineStub(c);
  // The stub is typed loosely (RPC types do not carry generics); the op map types both ends here.
  const outcome = (await stub.call(op, args, timeoutMs)) as CallOutcome<unknown>;
  if (!outcome.ok) throw new ProblemError(outcome.problem.code, outcome.problem.detail, outcome.problem.extensions);
  return outcome.value as OpResult<N>;
}
