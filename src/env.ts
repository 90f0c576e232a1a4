import type { Identity } from "./http/access";
import type { MachineObject } from "./durable/machine/machine";
import type { TeamObject } from "./durable/team/team";
import type { TokenObject } from "./durable/tokens/token";

/** Bindings and variables of the worker (see wrangler.toml; secrets come from `.dev.vars` locally). */
export interface Env {
  MACHINE: DurableObjectNamespace<MachineObject>;
  TEAM: DurableObjectNamespace<TeamObject>;
  TOKEN: DurableObjectNamespace<TokenObject>;
  /** The worker's static files (wrangler.toml `[assets]`: the dashboard, the sidecar package): asked for by its routes (http/static-files.ts). */
  ASSETS: Fetcher;
  /** Comma-separated bootstrap admin tokens; any one of them is accepted. */
  API_TOKEN: string;
  /** Key under which machine tokens are minted and checked. */
  TUNNEL_SECRET: string;
  /** Machine that `{worker}/v1/...` addresses; unset, such calls must name a machine. */
  DEFAULT_MACHINE?: string;
  DEFAULT_AGENT?: string;
  ACP_TIMEOUT_MS?: string;
  RECONNECT_GRACE_MS?: string;
  INSTALL_TIMEOUT_MS?: string;
  SSE_IDLE_CLOSE_MS?: string;
  /** Cloudflare Access (optional): the application's audience tag and team domain, and who gets which role. */
  CF_ACCESS_AUD?: string;
  CF_ACCESS_TEAM_DOMAIN?: string;
  /** Where Access publishes its signing keys; defaults to https://<team domain>/cdn-cgi/access/certs. */
  CF_ACCESS_CERTS_URL?: string;
  /** `email=role` pairs, comma separated; `*@example.com=viewer` matches a whole domain. */
  CF_ACCESS_ROLES?: string;
  /** Web Push (VAPID, RFC 8292): the key pair as base64url (public: the 65-byte point; private: a secret), and who runs it. */
  VAPID_PUBLIC_KEY?: string;
  VAPID_PRIVATE_KEY?: string;
  VAPID_SUBJECT?: string;
  /** The first retry of a failed notification waits this long (ms), each next one twice as long. */
  NOTIFY_BACKOFF_MS?: string;
  /** "1": notifications may go over http and to addresses inside (loopback, private): a runtime on a laptop only. */
  WEBHOOK_ALLOW_PRIVATE?: string;
  /** The ACP agent registry's JSON (default: the official registry); a team may point at a mirror. */
  ACP_REGISTRY_URL?: string;
  /** How long (ms) the registry's catalog is used before the registry is asked again; default 5 minutes. */
  ACP_REGISTRY_MAX_AGE_MS?: string;
  /** A wildcard domain routed to this worker: previews are served at `{port}--{machine label}.{PREVIEW_DOMAIN}`. */
  PREVIEW_DOMAIN?: string;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    machine: string;
    identity: Identity;
    /** Set by a route whose successful call is part of a session already audited (an ACP message after the first). */
    auditQuiet: boolean;
    /** Set by a GET that acts on the machine (attaching a terminal): audited like a change. */
    auditRead: boolean;
    /** What the audit line says beside the route (a login's agent and method: never a value a person typed). */
    auditDetail: string;
    /** A bootstrap admin signed in with the cookie: the SHA-256 of the API_TOKEN its sign-in is bound to (http/signin.ts). */
    apiTokenHash: string;
  };
};
