/**
 * Machines: a machine as the team lists it.
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { MachineSandbox } from "./sandbox";
import { resource } from "./resource";

export const Machine = resource("Machine", {
  id: z.string(),
  connected: z.boolean(),
  connectedAtMs: z.number().int().nullable(),
  lastSeenMs: z.number().int().nullable().describe("when its sidecar last connected or disconnected"),
  sidecarVersion: z.string().nullable(),
  sidecarOutdated: z.boolean().describe("older than the sidecar released with this worker: upgrade it"),
  platform: z.string().nullable(),
  sandbox: MachineSandbox.nullable().describe("what the machine can enforce and its owner's floor, --deny and --roots, as its sidecar last said"),
});
export type Machine = z.infer<typeof Machine>;

export const MachineList = resource("MachineList", {
  machines: z.array(Machine),
  nextAfter: z.string().nullable().describe("pass as ?after= for the next page; null on the last"),
});
