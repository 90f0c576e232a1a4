/**
 * The team's one Durable Object: what is shared by every machine of a deployment.
 * It keeps the registry of machines (written when a sidecar connects or disconnects, never per
 * request or per heartbeat: docs/architecture.md, "Idle cost"), the index of issued API tokens (each token's authority is its own object: see
 * durable/tokens/token.ts) and the audit log, in its SQLite storage.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import {
  DOCUMENT_KINDS,
  documentEtag,
  type DocumentKind,
  EMPTY_DOCUMENTS,
  ifMatchAllows,
  type MachineStatusOf,
  type TeamDocuments,
} from "../config/team-documents";
import { machineObject } from "../stubs";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";
import type { Machine } from "@agent-runtime/protocol/machines";
import type { McpMachineStatus } from "@agent-runtime/protocol/mcp";
import type { SkillsMachineStatus } from "@agent-runtime/protocol/skills";
import { type AuditEntry, type AuditPage, type AuditQuery, type MachineScope, scopeCovers, type TokenInfo } from "@agent-runtime/protocol/trust";
import type { AgentsMachineStatus } from "@agent-runtime/protocol/agents-config";
import type { DeliveryAttempt, NotificationPayload, Subscription, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { Deliverer } from "../notifications/deliverer";
import { migrate } from "../storage/migrations";
import { TEAM_MIGRATIONS } from "./team-schema";
import { settings } from "../../settings";

/** The audit log keeps the newest entries, at most this many and at most this old (docs/architecture.md, "Trust"). */
export const AUDIT_KEEP_ENTRIES = 100_000;
export const AUDIT_KEEP_MS = 90 * 86_400_000;
/** An upper bound on issued tokens, so listing them (one call per token object) stays bounded. */
export const MAX_TOKENS = 1000;

/** Machines per alarm run of the configuration fan-out and of the liveness refresh. */
export const FANOUT_BATCH = 200;
/** Up to this many connected machines, a narrowed subscription list is given to each before the change returns. */
const DIRECT_FANOUT_MAX = 16;
/** How often machines marked connected are asked whether they still are: one wake per machine every six hours. */
const REFRESH_EVERY_MS = 6 * 60 * 60_000;

/** What every per-machine status of a document holds, whatever else it reports. */
type AppliedStatus = { machine: string; version: string | null; appliedAtMs: number | null; error: string | null };
/** A machine applied a document (its status, built by the machine object from the sidecar's answer), or could not. */
export type AppliedOutcome<S extends AppliedStatus> = { applied: Omit<S, "machine" | "error"> } | { error: string; version: number };

type MachineRow = {
  id: string;
  connected: number;
  connected_at_ms: number | null;
  last_seen_ms: number | null;
  sidecar_version: string | null;
  platform: string | null;
};

function machineOf(r: MachineRow): Machine {
  return {
    id: r.id,
    connected: r.connected === 1,
    connectedAtMs: r.connected_at_ms,
    lastSeenMs: r.last_seen_ms,
    sidecarVersion: r.sidecar_version,
    sidecarOutdated: r.sidecar_version !== null && sidecarVersionAdvice(r.sidecar_version).outdated,
    platform: r.platform,
  };
}

/** Subscriptions one token may hold. */
export const MAX_SUBSCRIPTIONS_PER_OWNER = 50;

/** Who manages a subscription: its owner, or an admin whose scope covers the subscription's. */
export type SubscriptionReach = { owner: string } | { adminOf: MachineScope };

function reaches(who: SubscriptionReach, r: { owner: string; target: SubscriptionTarget }): boolean {
  return "owner" in who ? r.owner === who.owner : scopeCovers(who.adminOf, r.target.scope);
}

export class TeamObject extends DurableObject<Env> {
  /** Test notifications (`POST /v1/notifications/subscriptions/{id}/test`) are sent from here; all others from machines. */
  private readonly deliverer: Deliverer;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, "team", TEAM_MIGRATIONS);
    this.deliverer = new Deliverer(ctx.storage, {
      wake: (at) => this.ensureAlarm(at),
      vapid: settings(env).vapid,
      gone: async (id) => this.dropSubscription(id),
      backoffMs: settings(env).notifyBackoffMs,
      allowPrivate: settings(env).notifyAllowPrivate,
    });
  }

  // ---------- the index of issued API tokens ----------

  /** False when the team already has MAX_TOKENS live tokens. */
  registerToken(info: TokenInfo): boolean {
    const live = this.ctx.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM tokens WHERE json_extract(info, '$.revokedAtMs') IS NULL`).one().n;
    if (live >= MAX_TOKENS) return false;
    this.ctx.storage.sql.exec(`INSERT INTO tokens (id, info) VALUES (?, ?)`, info.id, JSON.stringify(info));
    return true;
  }

  updateToken(info: TokenInfo): void {
    this.ctx.storage.sql.exec(`UPDATE tokens SET info = ? WHERE id = ?`, JSON.stringify(info), info.id);
  }

  listTokens(): TokenInfo[] {
    return this.ctx.storage.sql
      .exec<{ info: string }>(`SELECT info FROM tokens ORDER BY id`)
      .toArray()
      .map((r) => JSON.parse(r.info) as TokenInfo)
      .sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  // ---------- the audit log ----------

  appendAudit(entry: Omit<AuditEntry, "seq">): void {
    const sql = this.ctx.storage.sql;
    const cursor = sql.exec(
      `INSERT INTO audit (at_ms, token, role, method, route, machine, status) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
      entry.atMs,
      entry.token,
      entry.role,
      entry.method,
      entry.route,
      entry.machine,
      entry.status,
    );
    const seq = Number(cursor.one().seq);
    // Trim now and then rather than on every append: one indexed delete per 256 entries.
    if (seq % 256 === 0) sql.exec(`DELETE FROM audit WHERE seq <= ? OR at_ms < ?`, seq - AUDIT_KEEP_ENTRIES, Date.now() - AUDIT_KEEP_MS);
  }

  /** A page of the log; a scope other than `*` reads only entries of its machines. */
  readAudit(query: AuditQuery, scope: MachineScope = "*"): AuditPage {
    const filters: [string, string | number | undefined][] = [
      ["machine IN (SELECT value FROM json_each(?))", scope === "*" ? undefined : JSON.stringify(scope)],
      ["seq < ?", query.before],
      ["token = ?", query.token],
      ["machine = ?", query.machine],
      ["status = ?", query.status],
      ["at_ms >= ?", query.sinceMs],
    ];
    const used = filters.filter((f): f is [string, string | number] => f[1] !== undefined);
    const where = used.map(([clause]) => clause);
    const params = used.map(([, value]) => value);
    const limit = query.limit ?? 100;
    type Row = { seq: number; at_ms: number; token: string; role: AuditEntry["role"]; method: string; route: string; machine: string | null; status: number };
    const rows = this.ctx.storage.sql
      .exec<Row>(`SELECT * FROM audit ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT ?`, ...params, limit + 1)
      .toArray();
    const entries = rows
      .slice(0, limit)
      .map((r) => ({ seq: r.seq, atMs: r.at_ms, token: r.token, role: r.role, method: r.method, route: r.route, machine: r.machine, status: r.status }));
    return { entries, nextBefore: rows.length > limit ? entries.at(-1)!.seq : null };
  }

  // ---------- the machines registry (written on connect and disconnect only) ----------

  /** A sidecar greeted its machine's object: one write, and the team's documents in the same answer. */
  async machineConnected(m: {
    id: string;
    connectedAtMs: number;
    sidecarVersion: string;
    platform: string;
  }): Promise<{ documents: TeamDocuments; recorded: Record<DocumentKind, string | null>; subscriptions: SubscriptionTarget[] }> {
    this.ctx.storage.sql.exec(
      `INSERT INTO machines (id, connected, connected_at_ms, last_seen_ms, sidecar_version, platform) VALUES (?, 1, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET connected = 1, connected_at_ms = excluded.connected_at_ms, last_seen_ms = excluded.last_seen_ms,
         sidecar_version = excluded.sidecar_version, platform = excluded.platform`,
      m.id,
      m.connectedAtMs,
      Date.now(),
      m.sidecarVersion,
      m.platform,
    );
    await this.ensureAlarm();
    const recordedVersion = async (kind: DocumentKind) => {
      const status = await this.ctx.storage.get<MachineStatusOf[typeof kind]>(`${kind}-status:${m.id}`);
      return status && status.error === null ? status.version : null;
    };
    return {
      documents: await this.getDocuments(),
      recorded: { skills: await recordedVersion("skills"), mcp: await recordedVersion("mcp"), agents: await recordedVersion("agents") },
      subscriptions: this.subscriptionsFor(m.id),
    };
  }

  machineDisconnected(id: string, atMs: number): void {
    this.ctx.storage.sql.exec(`UPDATE machines SET connected = 0, last_seen_ms = ? WHERE id = ?`, atMs, id);
  }

  /** Has this machine's sidecar ever connected? (A client's request for any other id creates nothing.) */
  machineExists(id: string): boolean {
    return this.ctx.storage.sql.exec(`SELECT 1 FROM machines WHERE id = ?`, id).toArray().length > 0;
  }

  /** A machine recorded its first session (once in its life): lists of sessions ask it from now on. */
  machineHasSessions(id: string): void {
    this.ctx.storage.sql.exec(`INSERT OR IGNORE INTO session_machines (id) VALUES (?)`, id);
  }

  /** The machines with sessions, of a scope (`*` or ids), by id. */
  machinesWithSessions(scope: "*" | string[]): string[] {
    const rows =
      scope === "*"
        ? this.ctx.storage.sql.exec<{ id: string }>(`SELECT id FROM session_machines ORDER BY id`)
        : this.ctx.storage.sql.exec<{ id: string }>(
            `SELECT id FROM session_machines WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`,
            JSON.stringify(scope),
          );
    return rows.toArray().map((r) => r.id);
  }

  /** One page of machines by id, after `after`. */
  listMachines(page: { limit?: number; after?: string } = {}): { machines: Machine[]; nextAfter: string | null } {
    const limit = page.limit ?? 500;
    const rows = this.ctx.storage.sql.exec<MachineRow>(`SELECT * FROM machines WHERE id > ? ORDER BY id LIMIT ?`, page.after ?? "", limit + 1).toArray();
    const machines = rows.slice(0, limit).map(machineOf);
    return { machines, nextAfter: rows.length > limit ? machines.at(-1)!.id : null };
  }

  /** The machines of a token's scope (at most 256 ids), by id: only those rows are read. */
  machinesByIds(ids: string[]): Machine[] {
    return this.ctx.storage.sql
      .exec<MachineRow>(`SELECT * FROM machines WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, JSON.stringify(ids))
      .toArray()
      .map(machineOf);
  }

  // ---------- notification subscriptions (per token; every machine holds a copy of its own) ----------

  private targets(): { id: string; owner: string; target: SubscriptionTarget; createdAt: number }[] {
    return this.ctx.storage.sql
      .exec<{ id: string; owner: string; target: string; created_at: number }>(`SELECT * FROM subscriptions ORDER BY created_at`)
      .toArray()
      .map((r) => ({ id: r.id, owner: r.owner, target: JSON.parse(r.target) as SubscriptionTarget, createdAt: r.created_at }));
  }

  private view(r: { owner: string; target: SubscriptionTarget; createdAt: number }): Subscription {
    const t = r.target;
    return {
      id: t.id,
      kind: t.kind,
      target: t.kind === "webhook" ? t.url : new URL(t.url).origin,
      events: t.events,
      machines: t.machines,
      muted: t.muted,
      owner: r.owner,
      createdAtMs: r.createdAt,
    };
  }

  /** One subscription of this owner (null: of anyone, for admins). */
  private owned(id: string, who: SubscriptionReach): { id: string; owner: string; target: SubscriptionTarget; createdAt: number } | undefined {
    return this.targets().find((r) => r.id === id && reaches(who, r));
  }

  /** The subscriptions that may hear of this machine (what its object keeps). */
  subscriptionsFor(machine: string): SubscriptionTarget[] {
    return this.targets()
      .map((r) => r.target)
      .filter((t) => (t.scope === "*" || t.scope.includes(machine)) && (t.machines === null || t.machines.includes(machine)));
  }

  /** Null when the owner holds as many subscriptions as it may. */
  async addSubscription(owner: string, target: SubscriptionTarget): Promise<Subscription | null> {
    const held = this.ctx.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM subscriptions WHERE owner = ?`, owner).one().n;
    if (held >= MAX_SUBSCRIPTIONS_PER_OWNER) return null;
    const createdAt = Date.now();
    this.ctx.storage.sql.exec(
      `INSERT INTO subscriptions (id, owner, target, created_at) VALUES (?, ?, ?, ?)`,
      target.id,
      owner,
      JSON.stringify(target),
      createdAt,
    );
    await this.startSubscriptionsFanout();
    return this.view({ owner, target, createdAt });
  }

  /** The subscriptions someone may manage: an owner's own, or (an admin's) those its scope covers. */
  listSubscriptions(who: SubscriptionReach): Subscription[] {
    return this.targets()
      .filter((r) => reaches(who, r))
      .map((r) => this.view(r));
  }

  /** Change a subscription this caller may manage; null when there is none. */
  async updateSubscription(id: string, owner: SubscriptionReach, change: { muted?: boolean }): Promise<Subscription | null> {
    const found = this.owned(id, owner);
    if (!found) return null;
    const target = { ...found.target, ...(change.muted !== undefined ? { muted: change.muted } : {}) };
    this.ctx.storage.sql.exec(`UPDATE subscriptions SET target = ? WHERE id = ?`, JSON.stringify(target), id);
    await this.narrowSubscriptions();
    return this.view({ ...found, target });
  }

  async deleteSubscription(id: string, owner: SubscriptionReach): Promise<boolean> {
    const found = this.owned(id, owner);
    if (!found) return false;
    await this.dropSubscription(id);
    return true;
  }

  /** A push service said the subscription is gone, or its owner removed it. */
  async dropSubscription(id: string): Promise<void> {
    this.ctx.storage.sql.exec(`DELETE FROM subscriptions WHERE id = ?`, id);
    await this.narrowSubscriptions();
  }

  /** A revoked token's subscriptions end with it. */
  async deleteSubscriptionsOf(owner: string): Promise<number> {
    const n = this.ctx.storage.sql.exec(`DELETE FROM subscriptions WHERE owner = ?`, owner).rowsWritten;
    if (n > 0) {
      await this.narrowSubscriptions();
    }
    return n;
  }

  /** A test notification to one subscription of this owner (null: any), sent from here; its attempts are listed like any. */
  async testSubscription(id: string, owner: SubscriptionReach, payload: NotificationPayload): Promise<boolean> {
    const found = this.owned(id, owner);
    if (!found) return false;
    await this.deliverer.enqueue([{ target: found.target, payload }]);
    return true;
  }

  listDeliveries(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.deliverer.list(subscriptions, limit);
  }

  /**
   * A subscription muted or removed must hear nothing more, at once: a team with few connected machines
   * gives each its new list before this returns; a larger one gets the batched fan-out.
   */
  private async narrowSubscriptions(): Promise<void> {
    const connected = this.connectedIdsAfter("", DIRECT_FANOUT_MAX + 1);
    if (connected.length > DIRECT_FANOUT_MAX) return this.startSubscriptionsFanout();
    await Promise.allSettled(connected.map((id) => machineObject(this.env, id).setSubscriptions(this.subscriptionsFor(id))));
  }

  /** Connected machines get the new list, a batch per alarm run (the others when they connect). */
  private async startSubscriptionsFanout(): Promise<void> {
    await this.ctx.storage.put("subscriptions-fanout", { after: "" });
    await this.ensureAlarm(Date.now());
  }

  // ---------- batched work: configuration fan-out and the six-hourly liveness refresh, one alarm ----------

  private async ensureAlarm(at = Date.now() + REFRESH_EVERY_MS): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }

  /**
   * Each run handles one batch, then asks to run again: a change of a team document reaches
   * FANOUT_BATCH machines per run (each call returns at once; the machine applies on its own time), so
   * no run comes near the platform's limits however many machines there are. Every six hours, machines marked
   * connected are asked whether they still are (a deploy can end sockets without a close reaching us).
   */
  override async alarm(): Promise<void> {
    const fanout = await this.ctx.storage.get<{ after: string }>("config-fanout");
    if (fanout) {
      const documents = await this.getDocuments();
      const ids = this.connectedIdsAfter(fanout.after, FANOUT_BATCH);
      await Promise.allSettled(ids.map((id) => machineObject(this.env, id).scheduleConfigApply(documents)));
      if (ids.length < FANOUT_BATCH) await this.ctx.storage.delete("config-fanout");
      else await this.ctx.storage.put("config-fanout", { after: ids.at(-1)! });
    }
    const subscriptionsFanout = await this.ctx.storage.get<{ after: string }>("subscriptions-fanout");
    if (subscriptionsFanout) {
      const ids = this.connectedIdsAfter(subscriptionsFanout.after, FANOUT_BATCH);
      await Promise.allSettled(ids.map((id) => machineObject(this.env, id).setSubscriptions(this.subscriptionsFor(id))));
      if (ids.length < FANOUT_BATCH) await this.ctx.storage.delete("subscriptions-fanout");
      else await this.ctx.storage.put("subscriptions-fanout", { after: ids.at(-1)! });
    }
    const deliveriesDue = await this.deliverer.run();
    const stored = await this.ctx.storage.get<{ after: string; dueMs: number }>("liveness-refresh");
    let refresh = stored ?? { after: "", dueMs: Date.now() + REFRESH_EVERY_MS };
    if (refresh.dueMs <= Date.now()) {
      const ids = this.connectedIdsAfter(refresh.after, FANOUT_BATCH);
      const online = await Promise.all(
        ids.map((id) =>
          machineObject(this.env, id)
            .isOnline()
            .catch(() => false),
        ),
      );
      ids.forEach((id, i) => {
        if (!online[i]) this.machineDisconnected(id, Date.now());
      });
      refresh = ids.length < FANOUT_BATCH ? { after: "", dueMs: Date.now() + REFRESH_EVERY_MS } : { after: ids.at(-1)!, dueMs: refresh.dueMs };
    }
    if (refresh !== stored) {
      await this.ctx.storage.put("liveness-refresh", refresh);
    }
    const more =
      (await this.ctx.storage.get("config-fanout")) !== undefined || (await this.ctx.storage.get("subscriptions-fanout")) !== undefined || refresh.after !== "";
    await this.ctx.storage.setAlarm(more ? Date.now() : Math.min(refresh.dueMs, deliveriesDue ?? Number.POSITIVE_INFINITY));
  }

  private connectedIdsAfter(after: string, limit: number): string[] {
    return this.ctx.storage.sql
      .exec<{ id: string }>(`SELECT id FROM machines WHERE connected = 1 AND id > ? ORDER BY id LIMIT ?`, after, limit)
      .toArray()
      .map((r) => r.id);
  }

  // ---------- the team's documents: skills, MCP servers and agents (one of each per deployment) ----------

  async getDocuments(): Promise<TeamDocuments> {
    const stored = await this.ctx.storage.get<TeamDocuments[DocumentKind]>([...DOCUMENT_KINDS]);
    return {
      skills: (stored.get("skills") as TeamDocuments["skills"] | undefined) ?? EMPTY_DOCUMENTS.skills,
      mcp: (stored.get("mcp") as TeamDocuments["mcp"] | undefined) ?? EMPTY_DOCUMENTS.mcp,
      agents: (stored.get("agents") as TeamDocuments["agents"] | undefined) ?? EMPTY_DOCUMENTS.agents,
    };
  }

  /**
   * Replace a document unless `ifMatch` names another version (then: the current one, unchanged). Every
   * connected machine gets the team's documents, a batch per alarm run, starting now (a newer change restarts the round).
   */
  async putDocument<K extends DocumentKind>(
    kind: K,
    config: TeamDocuments[K]["config"],
    ifMatch: string | null,
  ): Promise<{ ok: boolean; stored: TeamDocuments[K] }> {
    const current = (await this.getDocuments())[kind];
    if (ifMatch !== null && !ifMatchAllows(ifMatch, current.version)) return { ok: false, stored: current };
    const stored = { version: current.version + 1, config, updatedAtMs: Date.now() } as TeamDocuments[K];
    await this.ctx.storage.put(kind, stored);
    await this.ctx.storage.put("config-fanout", { after: "" });
    await this.ctx.storage.setAlarm(Date.now());
    return { ok: true, stored };
  }

  async recordSkillsApplied(machine: string, outcome: AppliedOutcome<SkillsMachineStatus>): Promise<void> {
    await this.recordApplied("skills", machine, outcome, { skills: [], perAgent: {}, errors: [] });
  }

  async recordMcpApplied(machine: string, outcome: AppliedOutcome<McpMachineStatus>): Promise<void> {
    await this.recordApplied("mcp", machine, outcome, { servers: [], perAgent: {}, errors: [] });
  }

  async recordAgentsApplied(machine: string, outcome: AppliedOutcome<AgentsMachineStatus>): Promise<void> {
    await this.recordApplied("agents", machine, outcome, { agents: {}, errors: [] });
  }

  /** What a machine applied, or why it did not: then what it applied before stays, with the error. */
  private async recordApplied<S extends AppliedStatus>(
    kind: DocumentKind,
    machine: string,
    outcome: AppliedOutcome<S>,
    nothing: Omit<S, keyof AppliedStatus>,
  ): Promise<void> {
    const key = `${kind}-status:${machine}`;
    let status: S;
    if ("applied" in outcome) status = { ...outcome.applied, machine, error: null } as S;
    else {
      const previous = await this.ctx.storage.get<S>(key);
      const error = `version ${documentEtag(outcome.version)} not applied: ${outcome.error}`;
      status = { ...nothing, ...previous, machine, version: previous?.version ?? null, appliedAtMs: previous?.appliedAtMs ?? null, error } as S;
    }
    await this.ctx.storage.put(key, status);
  }

  async skillsStatus(): Promise<SkillsMachineStatus[]> {
    return this.statusOf("skills");
  }

  async mcpStatus(): Promise<McpMachineStatus[]> {
    return this.statusOf("mcp");
  }

  async agentsStatus(): Promise<AgentsMachineStatus[]> {
    return this.statusOf("agents");
  }

  private async statusOf<K extends DocumentKind>(kind: K): Promise<MachineStatusOf[K][]> {
    const entries = await this.ctx.storage.list<MachineStatusOf[K]>({ prefix: `${kind}-status:` });
    return [...entries.values()].sort((a, b) => a.machine.localeCompare(b.machine));
  }
}
