/**
 * The team's one Durable Object: what is shared by every machine of a deployment (the map at the top of
 * docs/architecture.md). Each concern is its own class over the object's SQLite, and each RPC below hands
 * its work to one of them in one line: the index of issued tokens (a token's authority is its own object:
 * durable/tokens/token.ts), the audit log, the registry of machines (written when a sidecar connects or
 * disconnects, never per request: "Idle cost"), notification subscriptions, and the team's documents.
 * What the object does itself is the batched work of its one alarm: fan-outs to connected machines, test
 * notifications and the six-hourly liveness refresh.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";
import type { AppliedOutcome, DocumentConfigs, DocumentKind, MachineStatusOf, StoredDocument, TeamDocuments } from "../config/team-documents";
import type { RecordedVersions } from "../config/config-apply";
import type { FanoutKind } from "./fanouts";
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { machineObject } from "../stubs";
import type { Machine } from "@agent-runtime/protocol/machines";
import { AuditEntry, type AuditPage, type AuditQuery, type MachineScope, type TokenInfo } from "@agent-runtime/protocol/trust";
import { z } from "zod";
import type { DeliveryAttempt, NotificationPayload, Subscription, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { alarmBy, runAlarm, type Timed } from "../storage/alarm";
import { migrate } from "../storage/migrations";
import { TEAM_MIGRATIONS } from "./team-schema";
import type { SubscriptionReach } from "./subscription-book";
import type { Delivery } from "../triggers/trigger-book";
import { type DeliveryOutcome, type Trigger, TriggerRequest } from "@agent-runtime/protocol/triggers";
import { type Schedule, ScheduleRequest } from "@agent-runtime/protocol/schedules";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { type AttemptsTemplate, GroupCall, type GroupAnswer } from "@agent-runtime/protocol/attempts";
import { teamFeatures, type TeamParts } from "./team-features";
import { REFRESH_EVERY_MS } from "./liveness-refresh";

export { AUDIT_KEEP_ENTRIES, AUDIT_KEEP_MS } from "./audit-log";
export { MAX_TOKENS } from "./token-index";
export { MAX_SUBSCRIPTIONS_PER_OWNER, type SubscriptionReach } from "./subscription-book";

/** The records the team keeps for their task's machine, by their collection's name (`/v1/schedules`, `/v1/triggers`). */
export type TaskRecordKind = "schedules" | "triggers";

const AuditLines = z.array(AuditEntry.omit({ seq: true })).max(1000);

export { FANOUT_BATCH } from "./fanout-runs";
/** Up to this many connected machines, a narrowed subscription list is given to each before the change returns. */
const DIRECT_FANOUT_MAX = 16;

export class TeamObject extends DurableObject<Env> {
  /** Each feature by its name, for the RPC methods below (team-features.ts). */
  private readonly parts: TeamParts;
  /** The timed features, run by the one alarm. */
  private readonly timed: readonly Timed[];

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, "team", TEAM_MIGRATIONS);
    ({ parts: this.parts, list: this.timed } = teamFeatures({ ctx, env, dropSubscription: (id) => this.dropSubscription(id) }));
  }

  // ---------- tokens and the audit log ----------

  /** False when the team already has MAX_TOKENS live tokens. */
  registerToken(info: TokenInfo): boolean {
    return this.parts.tokens.register(info);
  }

  updateToken(info: TokenInfo): void {
    this.parts.tokens.update(info);
  }

  listTokens(): TokenInfo[] {
    return this.parts.tokens.list();
  }

  appendAudit(entry: Omit<AuditEntry, "seq">): void {
    this.parts.audit.append(entry);
  }

  /** Lines a machine's object batched (the permission policy's answers): one call for many. */
  appendAuditBatch(entries: Omit<AuditEntry, "seq">[]): void {
    for (const entry of AuditLines.parse(entries)) this.parts.audit.append(entry);
  }

  /** A page of the log; a scope other than `*` reads only entries of its machines. */
  readAudit(query: AuditQuery, scope: MachineScope = "*"): AuditPage {
    return this.parts.audit.read(query, scope);
  }

  // ---------- machines ----------

  /** A sidecar greeted its machine's object: one write, and the team's documents and subscriptions in the same answer. */
  async machineConnected(m: {
    id: string;
    connectedAtMs: number;
    sidecarVersion: string;
    platform: string;
    sandbox?: MachineSandbox | null;
  }): Promise<{ documents: TeamDocuments; recorded: RecordedVersions; subscriptions: SubscriptionTarget[] }> {
    this.parts.machines.connected(m);
    await this.ensureAlarm();
    return {
      documents: await this.parts.documents.all(),
      recorded: await this.parts.documents.recordedVersions(m.id),
      subscriptions: this.parts.subscriptions.targetsFor(m.id),
    };
  }

  machineDisconnected(id: string, atMs: number): void {
    this.parts.machines.disconnected(id, atMs);
  }

  machineExists(id: string): boolean {
    return this.parts.machines.exists(id);
  }

  machineHasSessions(id: string): void {
    this.parts.machines.hasSessions(id);
  }

  machinesWithSessions(scope: "*" | string[]): string[] {
    return this.parts.machines.withSessions(scope);
  }

  machinesToWatch(scope: "*" | string[]): string[] {
    return this.parts.machines.toWatch(scope);
  }

  listMachines(page: { limit?: number; after?: string } = {}): { machines: Machine[]; nextAfter: string | null } {
    return this.parts.machines.list(page);
  }

  machinesByIds(ids: string[]): Machine[] {
    return this.parts.machines.byIds(ids);
  }

  // ---------- notification subscriptions (per token; every machine holds a copy of its own) ----------

  subscriptionsFor(machine: string): SubscriptionTarget[] {
    return this.parts.subscriptions.targetsFor(machine);
  }

  /** Null when the owner holds as many subscriptions as it may. */
  async addSubscription(owner: string, target: SubscriptionTarget): Promise<Subscription | null> {
    const added = this.parts.subscriptions.add(owner, target);
    if (added) await this.startSubscriptionsFanout();
    return added;
  }

  listSubscriptions(who: SubscriptionReach): Subscription[] {
    return this.parts.subscriptions.list(who);
  }

  async updateSubscription(id: string, who: SubscriptionReach, change: { muted?: boolean }): Promise<Subscription | null> {
    const updated = this.parts.subscriptions.update(id, who, change);
    if (updated) await this.narrowSubscriptions();
    return updated;
  }

  async deleteSubscription(id: string, who: SubscriptionReach): Promise<boolean> {
    if (!this.parts.subscriptions.reachable(id, who)) return false;
    await this.dropSubscription(id);
    return true;
  }

  /** A push service said the subscription is gone, or its owner removed it. */
  async dropSubscription(id: string): Promise<void> {
    this.parts.subscriptions.drop(id);
    await this.narrowSubscriptions();
  }

  /** A revoked token's subscriptions end with it. */
  async deleteSubscriptionsOf(owner: string): Promise<number> {
    const n = this.parts.subscriptions.dropAllOf(owner);
    if (n > 0) await this.narrowSubscriptions();
    return n;
  }

  /** A test notification to one subscription this caller may manage, sent from here; its attempts are listed like any. */
  async testSubscription(id: string, who: SubscriptionReach, payload: NotificationPayload): Promise<boolean> {
    const found = this.parts.subscriptions.reachable(id, who);
    if (found) await this.parts.deliverer.enqueue([{ target: found.target, payload }]);
    return found !== undefined;
  }

  listDeliveries(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.parts.deliverer.list(subscriptions, limit);
  }

  // ---------- the team's documents (docs/architecture.md, "Team configuration") ----------

  async getDocuments(): Promise<TeamDocuments> {
    return this.parts.documents.all();
  }

  /**
   * Replace a document unless `ifMatch` names another version. Every connected machine gets the team's
   * documents, a batch per alarm run, starting now (a newer change restarts the round).
   */
  async putDocument<K extends DocumentKind>(
    kind: K,
    config: DocumentConfigs[K],
    ifMatch: string | null,
  ): Promise<{ ok: boolean; stored: StoredDocument<DocumentConfigs[K]> }> {
    const put = await this.parts.documents.put(kind, config, ifMatch);
    if (put.ok) await this.startFanout("config-fanout");
    return put;
  }

  async recordApplied(kind: DocumentKind, machine: string, outcome: AppliedOutcome): Promise<void> {
    await this.parts.documents.recordApplied(kind, machine, outcome);
  }

  async documentStatus(kind: DocumentKind): Promise<MachineStatusOf[DocumentKind][]> {
    return this.parts.documents.status(kind);
  }

  // ---------- schedules (docs/architecture.md, "Schedules"): one alarm serves every due time ----------

  async createSchedule(request: ScheduleRequest, who: string): Promise<Outcome<Schedule>> {
    const parsed = ScheduleRequest.parse(request);
    const created = this.parts.schedules.create(parsed, who);
    if (created.ok) this.parts.groups.keepTemplate(created.value.id, parsed.attempts ?? null);
    if (created.ok && created.value.nextRunAtMs !== null) await alarmBy(this.ctx.storage, created.value.nextRunAtMs);
    return created.ok ? { ok: true, value: this.withAttempts(created.value) } : created;
  }

  async pauseSchedule(id: string, paused: boolean): Promise<Outcome<Schedule>> {
    const changed = this.parts.schedules.setPaused(id, paused);
    if (changed.ok && changed.value.nextRunAtMs !== null) await alarmBy(this.ctx.storage, changed.value.nextRunAtMs);
    return changed.ok ? { ok: true, value: this.withAttempts(changed.value) } : changed;
  }

  // ---------- GitHub triggers (docs/architecture.md, "GitHub triggers") ----------

  createTrigger(request: TriggerRequest, who: string): Outcome<Trigger> {
    const parsed = TriggerRequest.parse(request);
    const created = this.parts.triggers.create(parsed, who);
    if (created.ok) this.parts.groups.keepTemplate(created.value.id, parsed.attempts ?? null);
    return created.ok ? { ok: true, value: this.withAttempts(created.value) } : created;
  }

  /** A delivery, checked here where the secret is: null when its signature is not the trigger's. */
  githubDelivery(id: string, delivery: Delivery): Promise<DeliveryOutcome | null> {
    return this.parts.triggers.deliver(id, delivery);
  }

  // ---------- schedules and triggers alike: records kept for their task's machine (the routes: http/task-records.ts) ----------

  /** Every schedule, or every trigger, oldest first. */
  listTaskRecords(kind: TaskRecordKind): (Schedule | Trigger)[] {
    const records: (Schedule | Trigger)[] = this.parts[kind].list();
    return records.map((r) => this.withAttempts(r));
  }

  getTaskRecord(kind: TaskRecordKind, id: string): Schedule | Trigger | null {
    const record = this.parts[kind].get(id);
    return record && this.withAttempts(record);
  }

  /** Tasks it started stay; a trigger's deliveries are refused from now on. */
  deleteTaskRecord(kind: TaskRecordKind, id: string): boolean {
    this.parts.groups.keepTemplate(id, null);
    return this.parts[kind].delete(id);
  }

  /** A schedule's or a trigger's attempt group, kept by the groups' book beside its row. */
  private withAttempts<T extends { id: string }>(owner: T): T & { attempts: AttemptsTemplate | null } {
    return { ...owner, attempts: this.parts.groups.templateOf(owner.id) };
  }

  // ---------- attempt groups (docs/architecture.md, "Attempt groups"): the record of each; its machines report ----------

  groupCall(call: GroupCall): Promise<Outcome<GroupAnswer>> {
    return this.parts.groups.handle(GroupCall.parse(call));
  }

  // ---------- batched work: fan-outs and the six-hourly liveness refresh, one alarm ----------

  /**
   * A subscription muted or removed must hear nothing more, at once: a team with few connected machines
   * gives each its new list before this returns; a larger one gets the batched fan-out.
   */
  private async narrowSubscriptions(): Promise<void> {
    const connected = this.parts.machines.connectedAfter("", DIRECT_FANOUT_MAX + 1);
    if (connected.length > DIRECT_FANOUT_MAX) return this.startSubscriptionsFanout();
    await Promise.allSettled(connected.map((id) => machineObject(this.env, id).setSubscriptions(this.parts.subscriptions.targetsFor(id))));
  }

  private startSubscriptionsFanout(): Promise<void> {
    return this.startFanout("subscriptions-fanout");
  }

  private async startFanout(kind: FanoutKind): Promise<void> {
    await this.parts.fanouts.start(kind);
    await this.ctx.storage.setAlarm(Date.now());
  }

  private ensureAlarm(at = Date.now() + REFRESH_EVERY_MS): Promise<void> {
    return alarmBy(this.ctx.storage, at);
  }

  /**
   * Each timed feature's due work (team-features.ts), then the alarm again by the earliest any still needs:
   * a fan-out's batch per run, deliveries, schedules, and every six hours the liveness refresh.
   */
  override async alarm(): Promise<void> {
    await runAlarm(this.ctx.storage, this.timed);
  }
}
