/**
 * The worker's settings, parsed once per isolate from its bindings (wrangler.toml vars and secrets):
 * every other module reads these typed values, never the raw strings. A value that does not parse
 * falls back to its default, as an unset one does, so a typo cannot stop the worker.
 */
import { z } from "zod";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { OPS } from "@agent-runtime/protocol/ops";
import { DEFAULT_REGISTRY_URL, FRESH_MS } from "./agents-registry/catalog";
import { AgentId } from "@agent-runtime/protocol/values";
import { type VapidKey, vapidFromKeys } from "./durable/notifications/web-push";

const positive = (fallback: number) =>
  z
    .string()
    .optional()
    .transform((v) => {
      const n = v === undefined || v.trim() === "" ? Number.NaN : Number(v);
      return Number.isFinite(n) && n > 0 ? n : fallback;
    });

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : null));

const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * The worker's variables and secrets (wrangler.toml `[vars]`, `wrangler secret put`; locally `.dev.vars`),
 * each as wrangler hands it over (a string, or absent) and what it means: the one list of them. `Env`
 * (env.ts) is derived from it, and `settings` below from its parse.
 */
const Vars = z.object({
  /** The bootstrap admin tokens, comma separated (any one is accepted); only what a Bearer header can carry (RFC 6750's token68). */
  API_TOKEN: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((t) => t.trim())
        .filter((t) => {
          if (!t) return false;
          if (TOKEN68.test(t)) return true;
          console.error("an API_TOKEN with characters a Bearer header cannot carry is ignored (letters, digits and -._~+/ only)");
          return false;
        }),
    ),
  /** Key under which machine tokens are minted and checked. */
  TUNNEL_SECRET: z
    .string()
    .optional()
    .transform((v) => v ?? ""),
  /** Machine that `{worker}/v1/...` addresses; unset, such calls must name a machine. */
  DEFAULT_MACHINE: optionalText,
  /** The agent of an ACP connection (`/acp`) that names none with `?agent=`. */
  DEFAULT_AGENT: z
    .string()
    .optional()
    .transform((v) => (v === "" ? undefined : v))
    .pipe(AgentId.optional())
    .transform((v) => v ?? null),
  ACP_TIMEOUT_MS: positive(LIMITS.acpTimeoutMs),
  RECONNECT_GRACE_MS: positive(LIMITS.reconnectGraceMs),
  INSTALL_TIMEOUT_MS: positive(OPS["agents.install"].deadlineMs),
  SSE_IDLE_CLOSE_MS: positive(LIMITS.sseIdleCloseMs),
  /** Cloudflare Access (optional): the application's audience tag and team domain. */
  CF_ACCESS_AUD: optionalText,
  CF_ACCESS_TEAM_DOMAIN: optionalText,
  /** Where Access publishes its signing keys; defaults to https://<team domain>/cdn-cgi/access/certs. */
  CF_ACCESS_CERTS_URL: optionalText,
  /** `email=role` pairs, comma separated; `*@example.com=viewer` matches a whole domain. */
  CF_ACCESS_ROLES: optionalText,
  /** Web Push (VAPID, RFC 8292): the key pair as base64url (public: the 65-byte point; private: a secret), and who runs it. */
  VAPID_PUBLIC_KEY: optionalText,
  VAPID_PRIVATE_KEY: optionalText,
  VAPID_SUBJECT: optionalText,
  /** The first retry of a failed notification waits this long (ms), each next one twice as long. */
  NOTIFY_BACKOFF_MS: positive(1000),
  /** "1": notifications may go over http and to addresses inside (loopback, private): a runtime on a laptop only. */
  WEBHOOK_ALLOW_PRIVATE: z
    .string()
    .optional()
    .transform((v) => v?.trim() === "1" || v?.trim().toLowerCase() === "true"),
  /** The ACP agent registry's JSON (default: the official registry); a team may point at a mirror. */
  ACP_REGISTRY_URL: z
    .string()
    .optional()
    .transform((v) => (v?.trim() && URL.canParse(v.trim()) ? v.trim() : DEFAULT_REGISTRY_URL)),
  /** How long (ms) the registry's catalog is used before the registry is asked again; default 5 minutes. */
  ACP_REGISTRY_MAX_AGE_MS: positive(FRESH_MS),
  /** A wildcard domain routed to this worker: previews are served at `{port}--{machine label}.{PREVIEW_DOMAIN}`; unset: path mode. */
  PREVIEW_DOMAIN: z
    .string()
    .optional()
    .transform((v) => {
      const domain =
        v
          ?.trim()
          .toLowerCase()
          .replace(/^\*?\./, "") ?? "";
      return /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(domain) ? domain : null;
    }),
});

function vapidOf(publicKey: string | null, privateKey: string | null, subject: string | null): VapidKey | null {
  if (!publicKey || !privateKey) return null;
  try {
    return vapidFromKeys(publicKey, privateKey, subject ?? "mailto:agent-runtime@localhost");
  } catch (err) {
    console.error(`Web Push is off: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}

/** The worker's settings: its variables parsed, then in the shape the code reads them. */
const Settings = Vars.transform((s) => {
  const issuer = s.CF_ACCESS_TEAM_DOMAIN
    ? (s.CF_ACCESS_TEAM_DOMAIN.startsWith("http") ? s.CF_ACCESS_TEAM_DOMAIN : `https://${s.CF_ACCESS_TEAM_DOMAIN}`).replace(/\/+$/, "")
    : null;
  return {
    apiTokens: s.API_TOKEN,
    tunnelSecret: s.TUNNEL_SECRET,
    defaultMachine: s.DEFAULT_MACHINE,
    /** The agent of an ACP connection (`/acp`) that names none with `?agent=`. */
    defaultAgent: s.DEFAULT_AGENT,
    acpTimeoutMs: s.ACP_TIMEOUT_MS,
    reconnectGraceMs: s.RECONNECT_GRACE_MS,
    installTimeoutMs: s.INSTALL_TIMEOUT_MS,
    sseIdleCloseMs: s.SSE_IDLE_CLOSE_MS,
    /** Cloudflare Access, when both its audience and team domain are set. */
    access:
      s.CF_ACCESS_AUD && issuer
        ? { audience: s.CF_ACCESS_AUD, issuer, certsUrl: s.CF_ACCESS_CERTS_URL ?? `${issuer}/cdn-cgi/access/certs`, roles: s.CF_ACCESS_ROLES }
        : null,
    /** Web Push's application server key (VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY, VAPID_SUBJECT), when set and valid. */
    vapid: vapidOf(s.VAPID_PUBLIC_KEY, s.VAPID_PRIVATE_KEY, s.VAPID_SUBJECT),
    /** The first retry of a failed notification waits this long, each next one twice as long. */
    notifyBackoffMs: s.NOTIFY_BACKOFF_MS,
    /** Notifications may go over http and to addresses inside the network (WEBHOOK_ALLOW_PRIVATE=1: local runtimes only). */
    notifyAllowPrivate: s.WEBHOOK_ALLOW_PRIVATE,
    /** Where the ACP agent registry is read (the official one, or a team's mirror). */
    registryUrl: s.ACP_REGISTRY_URL,
    /** How long a catalog read from it is used before it is asked again (with its ETag). */
    registryMaxAgeMs: s.ACP_REGISTRY_MAX_AGE_MS,
    /** Where previews get their own origins (PREVIEW_DOMAIN); null: they are served under the worker's own origin (path mode). */
    previewDomain: s.PREVIEW_DOMAIN,
  };
});

export type WorkerSettings = z.output<typeof Settings>;
/** The worker's variables and secrets as wrangler hands them over: what `Env` holds besides its bindings. */
export type WorkerVars = z.input<typeof Settings>;

const cache = new WeakMap<WorkerVars, WorkerSettings>();

export function settings(env: WorkerVars): WorkerSettings {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = Settings.parse(env);
  cache.set(env, parsed);
  return parsed;
}
