/**
 * What the team's documents (skills, MCP servers, agents, the permission policy) share on the wire
 * (docs/architecture.md, "Team configuration"): each machine's status of one, and a sidecar's answer to
 * applying one. Each kind declares only its own fields beside these.
 */
import { z } from "zod";
import { resource } from "./resource";

/** Why a sidecar applied nothing, as every kind it applies says it. */
export const NOT_APPLIED = "why the last apply did not happen at all (e.g. the machine was offline)";

/** The fields every status holds: the machine, the version it holds and since when, and its error; `text` describes the version and the error. */
function appliedShape(text: { version?: string; error?: string }) {
  const version = z.string().nullable();
  const error = z.string().nullable();
  return {
    machine: z.string(),
    version: text.version ? version.describe(text.version) : version,
    appliedAtMs: z.number().int().nullable(),
    error: text.error ? error.describe(text.error) : error,
  };
}

/** What every kind's status holds, whatever else it reports: a status read back where only these matter. */
export const AppliedStatus = z.object(appliedShape({}));
export type AppliedStatus = z.infer<typeof AppliedStatus>;

/** A kind's status of one machine, named `id`: the fields every status holds, the kind's own before its error. */
export function machineStatus<Shape extends z.ZodRawShape>(id: string, text: { version: string; error?: string }, shape: Shape) {
  const { error, ...applied } = appliedShape(text);
  return resource(id, { ...applied, ...shape, error });
}

/**
 * A sidecar's answer to applying a document whose status is `status`: the version applied, whether it had
 * applied exactly that already (`unchanged`: nothing was done; each kind says what it compares), when, and
 * the status's own fields (the team keeps the answer as the machine's status: config-apply.ts).
 */
export function applyResultOf<Shape extends z.ZodRawShape>(status: z.ZodObject<Shape>) {
  const { machine: _machine, version: _version, appliedAtMs: _appliedAtMs, error: _error, ...own } = status.shape;
  return z.object({ version: z.string(), unchanged: z.boolean().optional(), appliedAtMs: z.number(), ...own });
}
