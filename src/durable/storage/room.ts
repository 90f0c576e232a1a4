/**
 * Room for one more of a kind of record the team keeps per machine (schedules, triggers): refused once its
 * machine holds its limit, counted per machine so that a member of one machine cannot use up what members
 * of others need, or the team holds its own.
 */
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { Count, oneRow } from "./stored";

export interface PerMachineLimits {
  perMachine: number;
  team: number;
}

/**
 * Null while there is room for one more row in `table` (which names the kind in the refusal, and the route
 * that lists them) on `machine`, as its rows name their machine (`machineColumn`, an SQL expression).
 */
export function noRoom(
  sql: SqlStorage,
  table: "schedules" | "triggers",
  machineColumn: string,
  machine: string,
  limits: PerMachineLimits,
): Outcome<never> | null {
  const onMachine = oneRow(sql, Count, `SELECT COUNT(*) AS n FROM ${table} WHERE ${machineColumn} = ?`, machine).n;
  if (onMachine >= limits.perMachine) {
    const detail = `machine '${machine}' has ${limits.perMachine} ${table}: a member of it deletes one first (GET /v1/${table} lists them)`;
    return { ok: false, problem: { code: "conflict", detail } };
  }
  if (oneRow(sql, Count, `SELECT COUNT(*) AS n FROM ${table}`).n >= limits.team) {
    return { ok: false, problem: { code: "conflict", detail: `the team has ${limits.team} ${table}: delete one first` } };
  }
  return null;
}
