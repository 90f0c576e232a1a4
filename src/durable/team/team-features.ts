/**
 * The team object's features, registered (docs/architecture.md, "Features of an object"): each concern its
 * own class over the object's SQLite, built once per object, and the timed ones listed once in `list`,
 * in the order its one alarm runs them (storage/alarm.ts). The object (team.ts) reaches them only
 * through this list, or by name in `parts` for its RPC methods.
 */
import type { Env } from "../../env";
import { settings } from "../../settings";
import { AttemptGroups } from "../attempts/attempt-groups";
import { attemptSchedules, attemptTriggers } from "../attempts/template-groups";
import { Deliverer, delivererSettings } from "../notifications/deliverer";
import { ScheduleBook } from "../schedules/schedule-book";
import { alarmBy, type Timed } from "../storage/alarm";
import { TriggerBook } from "../triggers/trigger-book";
import { machineObject } from "../stubs";
import { AuditLog } from "./audit-log";
import { TeamDocumentStore } from "./documents";
import { FanoutRuns } from "./fanout-runs";
import { Fanouts } from "./fanouts";
import { LivenessRefresh } from "./liveness-refresh";
import { MachineRegistry } from "./machine-registry";
import { scheduleTasks, triggerTasks } from "./machine-tasks";
import { SubscriptionBook } from "./subscription-book";
import { TokenIndex } from "./token-index";

export interface TeamHost {
  ctx: DurableObjectState;
  env: Env;
  /** A push service said the subscription is gone (the object drops it and narrows the machines' lists). */
  dropSubscription(id: string): Promise<void>;
}

export type TeamParts = ReturnType<typeof teamFeatures>["parts"];

export function teamFeatures({ ctx, env, dropSubscription }: TeamHost) {
  const sql = ctx.storage.sql;
  const tokens = new TokenIndex(sql);
  const audit = new AuditLog(sql);
  const machines = new MachineRegistry(sql);
  const subscriptions = new SubscriptionBook(sql);
  const documents = new TeamDocumentStore(ctx.storage);
  const fanouts = new Fanouts(ctx.storage, (after, limit) => machines.connectedAfter(after, limit));
  const groups = new AttemptGroups(ctx.storage, {
    attemptCall: (machine, call) => machineObject(env, machine).attemptCall(call),
    base: (machine, args) => machineObject(env, machine).call("attempts.base", args),
    comment: (machine, args) => machineObject(env, machine).call("gh.comment", args),
    waitUntil: (work) => ctx.waitUntil(work),
  });
  const schedules = new ScheduleBook(sql, attemptSchedules(scheduleTasks(env), groups));
  const triggers = new TriggerBook(sql, attemptTriggers(triggerTasks(env), groups));
  /** Test notifications (`POST /v1/notifications/subscriptions/{id}/test`) are sent from here; all others from machines. */
  const deliverer = new Deliverer(ctx.storage, { wake: (at) => alarmBy(ctx.storage, at), gone: dropSubscription, ...delivererSettings(settings(env)) });
  const fanoutRuns = new FanoutRuns(fanouts, {
    "config-fanout": async () => {
      const all = await documents.all();
      return (id) => machineObject(env, id).scheduleConfigApply(all);
    },
    "subscriptions-fanout": async () => (id) => machineObject(env, id).setSubscriptions(subscriptions.targetsFor(id)),
  });
  const liveness = new LivenessRefresh(ctx.storage, machines, (id) => machineObject(env, id).isOnline());

  // The registration of the timed features: one line each, in the order the alarm runs them.
  const list: Timed[] = [
    fanoutRuns, // a batch of each fan-out in progress
    deliverer, // test notifications
    schedules,
    liveness,
  ]; // tokens, audit, machines, subscriptions, documents, groups and triggers have no time of their own: their RPC methods reach them (`parts`)
  const parts = { tokens, audit, machines, subscriptions, documents, fanouts, groups, schedules, triggers, deliverer };
  return { parts, list };
}
