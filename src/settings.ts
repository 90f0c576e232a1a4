/**
 * The worker's settings, parsed once per isolate from its bindings (wrangler.toml vars and secrets):
 * every other module reads these typed values, never the raw strings. A value that does not parse
 * falls back to its default, as an unset one does, so a typo cannot stop the worker.
 */
import { z } from "zod";
import type { Env } from "./env";
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

const Settings = z.object({
  /** The bootstrap admin tokens (API_TOKEN, comma separated); only what a Bearer header can carry (RFC 6750's token68). */
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
  TUNNEL_SECRET: z
    .string()
    .optional()
    .transform((v) => v ?? ""),
  DEFAULT_MACHINE: optionalText,
  DEFAULT_AGENT: z.preprocess((v) => (v === "" ? undefined : v), AgentId.optional()).transform((v) => v ?? null),
  ACP_TIMEOUT_MS: positive(LIMITS.acpTimeoutMs),
  RECONNECT_GRACE_MS: positive(LIMITS.reconnectGraceMs),
  INSTALL_TIMEOUT_MS: positive(OPS["agents.install"].deadlineMs),
  SSE_IDLE_CLOSE_MS: positive(LIMITS.sseIdleCloseMs),
  CF_ACCESS_AUD: optionalText,
  CF_ACCESS_TEAM_DOMAIN: optionalText,
  CF_ACCESS_CERTS_URL: optionalText,
  CF_ACCESS_ROLES: optionalText,
  VAPID_PUBLIC_KEY: optionalText,
  VAPID_PRIVATE_KEY: optionalText,
  VAPID_SUBJECT: optionalText,
  NOTIFY_BACKOFF_MS: positive(1000),
  WEBHOOK_ALLOW_PRIVATE: z
    .string()
    .optional()
    .transform((v) => v?.trim() === "1" || v?.trim().toLowerCase() === "true"),
  ACP_REGISTRY_URL: z
    .string()
    .optional()
    .transform((v) => (v?.trim() && URL.canParse(v.trim()) ? v.trim() : DEFAULT_REGISTRY_URL)),
  ACP_REGISTRY_MAX_AGE_MS: positive(FRESH_MS),
  /** The wildcard domain previews are served under (`{port}--{label}.{PREVIEW_DOMAIN}`); unset: path mode. */
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

export interface WorkerSettings {
  apiTokens: string[];
  tunnelSecret: string;
  defaultMachine: string | null;
  /** The agent of an ACP connection (`/acp`) that names none with `?agent=`. */
  defaultAgent: AgentId | null;
  acpTimeoutMs: number;
  reconnectGraceMs: number;
  installTimeoutMs: number;
  sseIdleCloseMs: number;
  /** Cloudflare Access, when both its audience and team domain are set. */
  access: { audience: string; issuer: string; certsUrl: string; roles: string | null } | null;
  /** Web Push's application server key (VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY, VAPID_SUBJECT), when set and valid. */
  vapid: VapidKey | null;
  /** The first retry of a failed notification waits this long, each next one twice as long. */
  notifyBackoffMs: number;
  /** Notifications may go over http and to addresses inside the network (WEBHOOK_ALLOW_PRIVATE=1: local runtimes only). */
  notifyAllowPrivate: boolean;
  /** Where the ACP agent registry is read (the official one, or a team's mirror). */
  registryUrl: string;
  /** How long a catalog read from it is used before it is asked again (with its ETag). */
  registryMaxAgeMs: number;
  /** Where previews get their own origins (PREVIEW_DOMAIN); null: they are served under the worker's own origin (path mode). */
  previewDomain: string | null;
}

function vapidOf(publicKey: string | null, privateKey: string | null, subject: string | null): VapidKey | null {
  if (!publicKey || !privateKey) return null;
  try {
    return vapidFromKeys(publicKey, privateKey, subject ?? "mailto:agent-runtime@localhost");
  } catch (err) {
    console.error(`Web Push is off: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}

const cache = new WeakMap<Env, WorkerSettings>();

export function settings(env: Env): WorkerSettings {
  const cached = cache.get(env);
  if (cached) return cached;
  const s = Settings.parse(env);
  const issuer = s.CF_ACCESS_TEAM_DOMAIN
    ? (s.CF_ACCESS_TEAM_DOMAIN.startsWith("http") ? s.CF_ACCESS_TEAM_DOMAIN : `https://${s.CF_ACCESS_TEAM_DOMAIN}`).replace(/\/+$/, "")
    : null;
  const parsed: WorkerSettings = {
    apiTokens: s.API_TOKEN,
    tunnelSecret: s.TUNNEL_SECRET,
    defaultMachine: s.DEFAULT_MACHINE,
    defaultAgent: s.DEFAULT_AGENT,
    acpTimeoutMs: s.ACP_TIMEOUT_MS,
    reconnectGraceMs: s.RECONNECT_GRACE_MS,
    installTimeoutMs: s.INSTALL_TIMEOUT_MS,
    sseIdleCloseMs: s.SSE_IDLE_CLOSE_MS,
    access:
      s.CF_ACCESS_AUD && issuer
        ? { audience: s.CF_ACCESS_AUD, issuer, certsUrl: s.CF_ACCESS_CERTS_URL ?? `${issuer}/cdn-cgi/access/certs`, roles: s.CF_ACCESS_ROLES }
        : null,
    vapid: vapidOf(s.VAPID_PUBLIC_KEY, s.VAPID_PRIVATE_KEY, s.VAPID_SUBJECT),
    notifyBackoffMs: s.NOTIFY_BACKOFF_MS,
    notifyAllowPrivate: s.WEBHOOK_ALLOW_PRIVATE,
    registryUrl: s.ACP_REGISTRY_URL,
    registryMaxAgeMs: s.ACP_REGISTRY_MAX_AGE_MS,
    previewDomain: s.PREVIEW_DOMAIN,
  };
  cache.set(env, parsed);
  return parsed;
}
