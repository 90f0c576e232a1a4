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
import { type FanoutKind, Fanouts } from "./fanouts";
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import { machineObject } from "../stubs";
import type { Machine } from "@agent-runtime/protocol/machines";
import { AuditEntry, type AuditPage, type AuditQuery, type MachineScope, type TokenInfo } from "@agent-runtime/protocol/trust";
import { z } from "zod";
import type { DeliveryAttempt, NotificationPayload, Subscription, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { Deliverer, delivererSettings } from "../notifications/deliverer";
import { alarmBy } from "../storage/alarm";
import { migrate } from "../storage/migrations";
import { getStored } from "../storage/stored";
import { settings } from "../../settings";
import { TEAM_MIGRATIONS } from "./team-schema";
import { TokenIndex } from "./token-index";
import { AuditLog } from "./audit-log";
import { MachineRegistry } from "./machine-registry";
import { SubscriptionBook, type SubscriptionReach } from "./subscription-book";
import { TeamDocumentStore } from "./documents";
import { scheduleTasks, triggerTasks } from "./machine-tasks";
import { ScheduleBook } from "../schedules/schedule-book";
import { type Delivery, TriggerBook } from "../triggers/trigger-book";
import { type DeliveryOutcome, type Trigger, TriggerRequest } from "@agent-runtime/protocol/triggers";
import { type Schedule, ScheduleRequest } from "@agent-runtime/protocol/schedules";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { type AttemptsTemplate, GroupCall, type GroupAnswer } from "@agent-runtime/protocol/attempts";
import { AttemptGroups } from "../attempts/attempt-groups";
import { attemptSchedules, attemptTriggers } from "../attempts/template-groups";

export { AUDIT_KEEP_ENTRIES, AUDIT_KEEP_MS } from "./audit-log";
export { MAX_TOKENS } from "./token-index";
export { MAX_SUBSCRIPTIONS_PER_OWNER, type SubscriptionReach } from "./subscription-book";

const AuditLines = z.array(AuditEntry.omit({ seq: true })).max(1000);

/** Machines per alarm run of the configuration fan-out and of the liveness refresh. */
export const FANOUT_BATCH = 200;
/** Up to this many connected machines, a narrowed subscription list is given to each before the change returns. */
const DIRECT_FANOUT_MAX = 16;
/** How often machines marked connected are asked whether they still are: one wake per machine every six hours. */
const REFRESH_EVERY_MS = 6 * 60 * 60_000;
/** Where the liveness refresh has come to, and when its next round is due. */
const LivenessRefresh = z.object({ after: z.string(), dueMs: z.number() });

export class TeamObject extends DurableObject<Env> {
  private readonly tokens: TokenIndex;
  private readonly audit: AuditLog;
  private readonly machines: MachineRegistry;
  private readonly subscriptions: SubscriptionBook;
  private readonly documents: TeamDocumentStore;
  private readonly fanouts: Fanouts;
  private readonly schedules: ScheduleBook;
  private readonly triggers: TriggerBook;
  private readonly groups: AttemptGroups;
  /** Test notifications (`POST /v1/notifications/subscriptions/{id}/test`) are sent from here; all others from machines. */
  private readonly deliverer: Deliverer;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, "team", TEAM_MIGRATIONS);
    const sql = ctx.storage.sql;
    this.tokens = new TokenIndex(sql);
    this.audit = new AuditLog(sql);
    this.machines = new MachineRegistry(sql);
    this.subscriptions = new SubscriptionBook(sql);
    this.documents = new TeamDocumentStore(ctx.storage);
    this.fanouts = new Fanouts(ctx.storage, (after, limit) => this.machines.connectedAfter(after, limit));
    this.groups = new AttemptGroups(ctx.storage, {
      attemptCall: (machine, call) => machineObject(env, machine).attemptCall(call),
      base: (machine, args) => machineObject(env, machine).call("attempts.base", args),
      comment: (machine, args) => machineObject(env, machine).call("gh.comment", args),
      waitUntil: (work) => ctx.waitUntil(work),
    });
    this.schedules = new ScheduleBook(sql, attemptSchedules(scheduleTasks(env), this.groups));
    this.triggers = new TriggerBook(sql, attemptTriggers(triggerTasks(env), this.groups));
    this.deliverer = new Deliverer(ctx.storage, {
      wake: (at) => alarmBy(ctx.storage, at),
      gone: (id) => this.dropSubscription(id),
      ...delivererSettings(settings(env)),
    });
  }

  // ---------- tokens and the audit log ----------

  /** False when the team already has MAX_TOKENS live tokens. */
  registerToken(info: TokenInfo): boolean {
    return this.tokens.register(info);
  }

  updateToken(info: TokenInfo): void {
    this.tokens.update(info);
  }

  listTokens(): TokenInfo[] {
    return this.tokens.list();
  }

  appendAudit(entry: Omit<AuditEntry, "seq">): void {
    this.audit.append(entry);
  }

  /** Lines a machine's object batched (the permission policy's answers): one call for many. */
  appendAuditBatch(entries: Omit<AuditEntry, "seq">[]): void {
    for (const entry of AuditLines.parse(entries)) this.audit.append(entry);
  }

  /** A page of the log; a scope other than `*` reads only entries of its machines. */
  readAudit(query: AuditQuery, scope: MachineScope = "*"): AuditPage {
    return this.audit.read(query, scope);
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
    this.machines.connected(m);
    await this.ensureAlarm();
    return { documents: await this.documents.all(), recorded: await this.documents.recordedVersions(m.id), subscriptions: this.subscriptions.targetsFor(m.id) };
  }

  machineDisconnected(id: string, atMs: number): void {
    this.machines.disconnected(id, atMs);
  }

  machineExists(id: string): boolean {
    return this.machines.exists(id);
  }

  machineHasSessions(id: string): void {
    this.machines.hasSessions(id);
  }

  machinesWithSessions(scope: "*" | string[]): string[] {
    return this.machines.withSessions(scope);
  }

  machinesToWatch(scope: "*" | string[]): string[] {
    return this.machines.toWatch(scope);
  }

  listMachines(page: { limit?: number; after?: string } = {}): { machines: Machine[]; nextAfter: string | null } {
    return this.machines.list(page);
  }

  machinesByIds(ids: string[]): Machine[] {
    return this.machines.byIds(ids);
  }

  // ---------- notification subscriptions (per token; every machine holds a copy of its own) ----------

  subscriptionsFor(machine: string): SubscriptionTarget[] {
    return this.subscriptions.targetsFor(machine);
  }

  /** Null when the owner holds as many subscriptions as it may. */
  async addSubscription(owner: string, target: SubscriptionTarget): Promise<Subscription | null> {
    const added = this.subscriptions.add(owner, target);
    if (added) await this.startSubscriptionsFanout();
    return added;
  }

  listSubscriptions(who: SubscriptionReach): Subscription[] {
    return this.subscriptions.list(who);
  }

  async updateSubscription(id: string, who: SubscriptionReach, change: { muted?: boolean }): Promise<Subscription | null> {
    const updated = this.subscriptions.update(id, who, change);
    if (updated) await this.narrowSubscriptions();
    return updated;
  }

  async deleteSubscription(id: string, who: SubscriptionReach): Promise<boolean> {
    if (!this.subscriptions.reachable(id, who)) return false;
    await this.dropSubscription(id);
    return true;
  }

  /** A push service said the subscription is gone, or its owner removed it. */
  async dropSubscription(id: string): Promise<void> {
    this.subscriptions.drop(id);
    await this.narrowSubscriptions();
  }

  /** A revoked token's subscriptions end with it. */
  async deleteSubscriptionsOf(owner: string): Promise<number> {
    const n = this.subscriptions.dropAllOf(owner);
    if (n > 0) await this.narrowSubscriptions();
    return n;
  }

  /** A test notification to one subscription this caller may manage, sent from here; its attempts are listed like any. */
  async testSubscription(id: string, who: SubscriptionReach, payload: NotificationPayload): Promise<boolean> {
    const found = this.subscriptions.reachable(id, who);
    if (found) await this.deliverer.enqueue([{ target: found.target, payload }]);
    return found !== undefined;
  }

  listDeliveries(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.deliverer.list(subscriptions, limit);
  }

  // ---------- the team's documents (docs/architecture.md, "Team configuration") ----------

  async getDocuments(): Promise<TeamDocuments> {
    return this.documents.all();
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
    const put = await this.documents.put(kind, config, ifMatch);
    if (put.ok) await this.startFanout("config-fanout");
    return put;
  }

  async recordApplied(kind: DocumentKind, machine: string, outcome: AppliedOutcome): Promise<void> {
    await this.documents.recordApplied(kind, machine, outcome);
  }

  async documentStatus(kind: DocumentKind): Promise<MachineStatusOf[DocumentKind][]> {
    return this.documents.status(kind);
  }

  // ---------- schedules (docs/architecture.md, "Schedules"): one alarm serves every due time ----------

  async createSchedule(request: ScheduleRequest, who: string): Promise<Outcome<Schedule>> {
    const parsed = ScheduleRequest.parse(request);
    const created = this.schedules.create(parsed, who);
    if (created.ok) this.groups.keepTemplate(created.value.id, parsed.attempts ?? null);
    if (created.ok && created.value.nextRunAtMs !== null) await alarmBy(this.ctx.storage, created.value.nextRunAtMs);
    return created.ok ? { ok: true, value: this.withAttempts(created.value) } : created;
  }

  listSchedules(): Schedule[] {
    return this.schedules.list().map((s) => this.withAttempts(s));
  }

  getSchedule(id: string): Schedule | null {
    const schedule = this.schedules.get(id);
    return schedule ? this.withAttempts(schedule) : null;
  }

  async pauseSchedule(id: string, paused: boolean): Promise<Outcome<Schedule>> {
    const changed = this.schedules.setPaused(id, paused);
    if (changed.ok && changed.value.nextRunAtMs !== null) await alarmBy(this.ctx.storage, changed.value.nextRunAtMs);
    return changed.ok ? { ok: true, value: this.withAttempts(changed.value) } : changed;
  }

  deleteSchedule(id: string): boolean {
    this.groups.keepTemplate(id, null);
    return this.schedules.delete(id);
  }

  /** A schedule's or a trigger's attempt group, kept by the groups' book beside its row. */
  private withAttempts<T extends { id: string }>(owner: T): T & { attempts: AttemptsTemplate | null } {
    return { ...owner, attempts: this.groups.templateOf(owner.id) };
  }

  // ---------- GitHub triggers (docs/architecture.md, "GitHub triggers") ----------

  createTrigger(request: TriggerRequest, who: string): Outcome<Trigger> {
    const parsed = TriggerRequest.parse(request);
    const created = this.triggers.create(parsed, who);
    if (created.ok) this.groups.keepTemplate(created.value.id, parsed.attempts ?? null);
    return created.ok ? { ok: true, value: this.withAttempts(created.value) } : created;
  }

  listTriggers(): Trigger[] {
    return this.triggers.list().map((t) => this.withAttempts(t));
  }

  getTrigger(id: string): Trigger | null {
    const trigger = this.triggers.get(id);
    return trigger ? this.withAttempts(trigger) : null;
  }

  deleteTrigger(id: string): boolean {
    this.groups.keepTemplate(id, null);
    return this.triggers.delete(id);
  }

  /** A delivery, checked here where the secret is: null when its signature is not the trigger's. */
  githubDelivery(id: string, delivery: Delivery): Promise<DeliveryOutcome | null> {
    return this.triggers.deliver(id, delivery);
  }

  // ---------- attempt groups (docs/architecture.md, "Attempt groups"): the record of each; its machines report ----------

  groupCall(call: GroupCall): Promise<Outcome<GroupAnswer>> {
    return this.groups.handle(GroupCall.parse(call));
  }

  // ---------- batched work: fan-outs and the six-hourly liveness refresh, one alarm ----------

  /**
   * A subscription muted or removed must hear nothing more, at once: a team with few connected machines
   * gives each its new list before this returns; a larger one gets the batched fan-out.
   */
  private async narrowSubscriptions(): Promise<void> {
    const connected = this.machines.connectedAfter("", DIRECT_FANOUT_MAX + 1);
    if (connected.length > DIRECT_FANOUT_MAX) return this.startSubscriptionsFanout();
    await Promise.allSettled(connected.map((id) => machineObject(this.env, id).setSubscriptions(this.subscriptions.targetsFor(id))));
  }

  private startSubscriptionsFanout(): Promise<void> {
    return this.startFanout("subscriptions-fanout");
  }

  private async startFanout(kind: FanoutKind): Promise<void> {
    await this.fanouts.start(kind);
    await this.ctx.storage.setAlarm(Date.now());
  }

  private ensureAlarm(at = Date.now() + REFRESH_EVERY_MS): Promise<void> {
    return alarmBy(this.ctx.storage, at);
  }

  /**
   * Each run handles one batch, then asks to run again: a change of a team document reaches
   * FANOUT_BATCH machines per run (each call returns at once; the machine applies on its own time), so
   * no run comes near the platform's limits however many machines there are. Every six hours, machines marked
   * connected are asked whether they still are (a deploy can end sockets without a close reaching us).
   */
  override async alarm(): Promise<void> {
    // The documents are read only when a change is being fanned out.
    const documents = (await this.fanouts.pending("config-fanout")) ? await this.documents.all() : null;
    const moreConfig =
      documents !== null && (await this.fanouts.batch("config-fanout", FANOUT_BATCH, (id) => machineObject(this.env, id).scheduleConfigApply(documents)));
    const moreSubscriptions = await this.fanouts.batch("subscriptions-fanout", FANOUT_BATCH, (id) =>
      machineObject(this.env, id).setSubscriptions(this.subscriptions.targetsFor(id)),
    );
    const deliveriesDue = await this.deliverer.run();
    const scheduleDue = await this.schedules.run();
    const stored = await getStored(this.ctx.storage, "liveness-refresh", LivenessRefresh);
    let refresh = stored ?? { after: "", dueMs: Date.now() + REFRESH_EVERY_MS };
    if (refresh.dueMs <= Date.now()) {
      const ids = this.machines.connectedAfter(refresh.after, FANOUT_BATCH);
      const online = await Promise.all(
        ids.map((id) =>
          machineObject(this.env, id)
            .isOnline()
            .catch(() => false),
        ),
      );
      ids.forEach((id, i) => {
        if (!online[i]) this.machines.disconnected(id, Date.now());
      });
      refresh = ids.length < FANOUT_BATCH ? { after: "", dueMs: Date.now() + REFRESH_EVERY_MS } : { after: ids.at(-1)!, dueMs: refresh.dueMs };
    }
    if (refresh !== stored) await this.ctx.storage.put("liveness-refresh", refresh);
    const more = moreConfig || moreSubscriptions || refresh.after !== "";
    // Never later than an alarm set while this run waited on other objects (a change's fan-out, a new
    // schedule, a test notification): each asked for its own time, which a run must not put off.
    await alarmBy(
      this.ctx.storage,
      more ? Date.now() : Math.min(refresh.dueMs, deliveriesDue ?? Number.POSITIVE_INFINITY, scheduleDue ?? Number.POSITIVE_INFINITY),
    );
  }
}
