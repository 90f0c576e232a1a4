import type { MachineObject } from "./durable/machine";
import type { TeamObject } from "./durable/team";

/** Bindings and variables of the worker (see wrangler.toml; secrets come from `.dev.vars` locally). */
export interface Env {
  MACHINE: DurableObjectNamespace<MachineObject>;
  TEAM: DurableObjectNamespace<TeamObject>;
  /** Comma-separated API tokens; any one of them is accepted. */
  API_TOKEN: string;
  /** Key under which machine tokens are minted and checked. */
  TUNNEL_SECRET: string;
  /** Machine that `{worker}/v1/...` addresses when several are connected. */
  DEFAULT_MACHINE?: string;
  ACP_TIMEOUT_MS?: string;
  RECONNECT_GRACE_MS?: string;
  INSTALL_TIMEOUT_MS?: string;
}

export type AppEnv = { Bindings: Env; Variables: { machine: string } };

export function numberVar(value: string | undefined, fallback: number): number {
  const n = value === undefined || value === "" ? NaN : Number(value);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}
