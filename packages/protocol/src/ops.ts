/**
 * The operations the worker calls on a sidecar, one table made of each feature's (`ops/*.ts`): each with
 * its deadline, the schema of its arguments and of its result, and whether it changes nothing. Total: the
 * sidecar's handler table must name every operation (`satisfies OpHandlers`), so a missing one is a type
 * error, not a 404 at run time.
 */
import { z } from "zod";
import { ACP_OPS } from "./ops/acp";
import { ATTEMPT_OPS } from "./ops/attempts";
import { AGENT_OPS } from "./ops/agents";
import { CONFIG_OPS } from "./ops/config";
import { issuesText, type OpDefinition } from "./ops/define";
import { FILE_OPS } from "./ops/files";
import { LOGIN_OPS } from "./ops/logins";
import { PORT_OPS } from "./ops/ports";
import { PROCESS_OPS } from "./ops/processes";
import { REVIEW_OPS } from "./ops/review";

export const OPS = {
  ...ACP_OPS,
  ...AGENT_OPS,
  ...PROCESS_OPS,
  ...CONFIG_OPS,
  ...FILE_OPS,
  ...REVIEW_OPS,
  ...PORT_OPS,
  ...ATTEMPT_OPS,
  ...LOGIN_OPS,
} as const satisfies Record<string, OpDefinition>;

export type OpName = keyof typeof OPS;
export type OpArgs<N extends OpName> = z.output<(typeof OPS)[N]["args"]>;
export type OpResult<N extends OpName> = z.output<(typeof OPS)[N]["result"]>;
export const OpNameSchema = z.enum(Object.keys(OPS) as [OpName, ...OpName[]]);

/** See `OpDefinition.readOnly`. */
export function isReadOnly(op: OpName): boolean {
  const definition: OpDefinition = OPS[op];
  return definition.readOnly === true;
}

/** An operation's arguments, parsed against its schema (the sidecar does this before any handler runs). */
export function parseOpArgs<N extends OpName>(op: N, args: unknown): { ok: true; args: OpArgs<N> } | { ok: false; error: string } {
  const parsed = OPS[op].args.safeParse(args);
  return parsed.success ? { ok: true, args: parsed.data as OpArgs<N> } : { ok: false, error: issuesText(parsed.error, "(args)") };
}

/** An operation's result, parsed against its schema (the worker does this before answering anyone). */
export function parseOpResult<N extends OpName>(op: N, value: unknown): { ok: true; value: OpResult<N> } | { ok: false; error: string } {
  const parsed = OPS[op].result.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data as OpResult<N> } : { ok: false, error: issuesText(parsed.error, "(result)") };
}
