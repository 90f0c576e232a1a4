/**
 * The ACP registry as this deployment sees it (docs/architecture.md, "Agents"): fetched by the worker
 * from ACP_REGISTRY_URL, kept with its ETag, asked again at most every few minutes (a conditional GET, so
 * an unchanged registry costs one 304), served from what was kept when the registry cannot be reached,
 * and the built-in list when it never was. Kept in the isolate's memory and in the Cache API (which
 * survives isolates where the zone has a cache); never in the team object: nothing per request goes there.
 */
import { parseRegistry, type RegistryAgent, RegistryAgent as RegistryAgentSchema } from "@agent-runtime/protocol/registry";
import { z } from "zod";
import { BUILTIN_CATALOG } from "./builtin";

export const DEFAULT_REGISTRY_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/** How long a fetched catalog is used without asking the registry again. */
export const FRESH_MS = 5 * 60_000;
const FETCH_TIMEOUT_MS = 5_000;

export interface Catalog {
  agents: RegistryAgent[];
  /** registry: fetched (or revalidated) now; cache: kept and still fresh; stale: kept, the registry unreachable; builtin: never reached. */
  source: "registry" | "cache" | "stale" | "builtin";
  url: string;
  fetchedAtMs: number | null;
  /** Why the registry was not read this time, when it was not. */
  error: string | null;
}

interface Kept {
  url: string;
  etag: string | null;
  fetchedAtMs: number;
  agents: RegistryAgent[];
}

/** The isolate's copy, per registry address. */
const memory = new Map<string, Kept>();

/** What the Cache API holds of a catalog (a copy of `Kept`). */
const CachedCatalog = z.object({ etag: z.string().nullish(), fetchedAtMs: z.number().catch(0), agents: z.array(RegistryAgentSchema) });

const cacheKey = (url: string) => new Request(`https://agent-runtime.internal/registry?url=${encodeURIComponent(url)}`);

async function fromCache(cache: Cache | null, url: string): Promise<Kept | null> {
  if (!cache) return null;
  try {
    const hit = await cache.match(cacheKey(url));
    if (!hit) return null;
    // Parsed again: what the cache holds is data like any other.
    const kept = CachedCatalog.parse(await hit.json());
    return { url, etag: kept.etag ?? null, fetchedAtMs: kept.fetchedAtMs, agents: kept.agents };
  } catch {
    return null;
  }
}

async function keep(cache: Cache | null, kept: Kept): Promise<void> {
  memory.set(kept.url, kept);
  await cache
    ?.put(cacheKey(kept.url), new Response(JSON.stringify(kept), { headers: { "content-type": "application/json", "cache-control": "max-age=31536000" } }))
    .catch(() => undefined);
}

/** The catalog, reading the registry when what is kept is older than `maxAgeMs` (FRESH_MS unless the deployment says). */
export async function loadCatalog(url: string, cache: Cache | null, now = Date.now(), maxAgeMs = FRESH_MS): Promise<Catalog> {
  const kept = memory.get(url) ?? (await fromCache(cache, url));
  if (kept && now - kept.fetchedAtMs < maxAgeMs) return { agents: kept.agents, source: "cache", url, fetchedAtMs: kept.fetchedAtMs, error: null };
  try {
    const res = await fetch(url, {
      headers: { accept: "application/json", ...(kept?.etag ? { "if-none-match": kept.etag } : {}) },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (res.status === 304 && kept) {
      const fresh = { ...kept, fetchedAtMs: now };
      await keep(cache, fresh);
      return { agents: fresh.agents, source: "registry", url, fetchedAtMs: now, error: null };
    }
    if (!res.ok) throw new Error(`the registry answered HTTP ${res.status}`);
    const { agents } = parseRegistry(await res.json());
    const fresh = { url, etag: res.headers.get("etag"), fetchedAtMs: now, agents };
    await keep(cache, fresh);
    return { agents, source: "registry", url, fetchedAtMs: now, error: null };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    if (kept) return { agents: kept.agents, source: "stale", url, fetchedAtMs: kept.fetchedAtMs, error };
    return { agents: BUILTIN_CATALOG, source: "builtin", url, fetchedAtMs: null, error };
  }
}

/** The Cache API where the runtime has one (workerd), none elsewhere (in-process tests). */
// Cast: the module also runs in Node (the in-process tests), whose globals have no `caches`.
export const defaultCache = (): Cache | null => (globalThis as { caches?: { default?: Cache } }).caches?.default ?? null;
