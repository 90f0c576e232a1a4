/**
 * The ids the runtime hands out (src/lib/ids.ts mints their random part): a prefix naming the kind, then
 * `-` and 16 random hex digits; the id of what lives on one machine (a session, a task) ends with `-` and
 * that machine, so any worker can route it without a lookup.
 */
import { z } from "zod";

/** An id of what the team keeps (`sch-<16 hex>`), registered as the component `id`; `kind` names it in the error. */
export function runtimeId(id: string, prefix: string, kind: string) {
  return z
    .string()
    .regex(new RegExp(`^${prefix}-[0-9a-f]{16}$`), `a ${kind} id as the runtime hands it out (${prefix}-<16 hex>)`)
    .meta({ id });
}

/** An id of what lives on one machine (`ses-<16 hex>-<machine>`). */
export function machineRoutedId(id: string, prefix: string, kind: string) {
  return z
    .string()
    .max(160)
    .regex(new RegExp(`^${prefix}-[0-9a-f]{16}-[A-Za-z0-9][A-Za-z0-9._-]*$`), `a ${kind} id as the runtime hands it out (${prefix}-<16 hex>-<machine>)`)
    .meta({ id });
}

/** The machine a `machineRoutedId` names. */
export function machineOfRoutedId(prefix: string, id: string): string {
  return id.slice(prefix.length + 1 + 16 + 1);
}
