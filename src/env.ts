import type { Identity } from "./lib/identity";
import type { WorkerVars } from "./settings";
import type { MachineObject } from "./durable/machine/machine";
import type { TeamObject } from "./durable/team/team";
import type { TokenObject } from "./durable/tokens/token";

/**
 * Bindings and variables of the worker (wrangler.toml; secrets come from `.dev.vars` locally): its objects
 * and static files, and its variables as settings.ts lists them (one list: `WorkerVars` is derived from
 * the settings' schema). The bootstrap token and the tunnel's key are always set where the worker runs.
 */
export type Env = {
  MACHINE: DurableObjectNamespace<MachineObject>;
  TEAM: DurableObjectNamespace<TeamObject>;
  TOKEN: DurableObjectNamespace<TokenObject>;
  /** The worker's static files (wrangler.toml `[assets]`: the dashboard, the sidecar package): asked for by its routes (http/static-files.ts). */
  ASSETS: Fetcher;
} & WorkerVars &
  Required<Pick<WorkerVars, "API_TOKEN" | "TUNNEL_SECRET">>;

export type AppEnv = {
  Bindings: Env;
  Variables: {
    machine: string;
    identity: Identity;
    /** Set by a route whose successful call is part of a session already audited (an ACP message after the first). */
    auditQuiet: boolean;
    /** Set by a GET that acts on the machine (attaching a terminal): audited like a change. */
    auditRead: boolean;
    /** A bootstrap admin signed in with the cookie: the SHA-256 of the API_TOKEN its sign-in is bound to (http/signin.ts). */
    apiTokenHash: string;
  };
};
