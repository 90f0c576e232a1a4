/**
 * One machine's notifications (docs/architecture.md, "Notifications"): the subscriptions that may hear of
 * it (the team's copy, handed over by its fan-out and on each connect), an event turned into one queued
 * delivery per subscription that hears of it, sent by the object's alarm, and "went away" told once and
 * "is back" only after it.
 */
import { type DeliveryAttempt, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { z } from "zod";
import { getStored } from "../storage/stored";
import type { Deliverer } from "./deliverer";
import { hears, payloadOf, type RuntimeEvent } from "./events";
import type { Back, MachineFeature } from "../machine/feature";

export class MachineNotifications implements MachineFeature {
  /** The subscriptions that may hear of this machine, read from storage once. */
  private subscriptions: SubscriptionTarget[] | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly deliverer: Deliverer,
    /** The machine has records (deliveries) the team lists. */
    private readonly announceRecords: () => void,
    /** Work that goes on after the call that started it has returned. */
    private readonly waitUntil: (work: Promise<unknown>) => void,
  ) {}

  /** The team's fan-out (or a connect): the subscriptions that may hear of this machine now. */
  async keep(subscriptions: SubscriptionTarget[]): Promise<void> {
    const before = this.subscriptions ?? (await getStored(this.storage, "subscriptions", z.array(SubscriptionTarget))) ?? [];
    this.subscriptions = subscriptions;
    // A reconnect that changed nothing writes nothing.
    if (JSON.stringify(before) !== JSON.stringify(subscriptions)) await this.storage.put("subscriptions", subscriptions);
  }

  /** Queue one delivery per subscription that hears of this event; the alarm sends them. */
  async notify(event: RuntimeEvent): Promise<void> {
    this.subscriptions ??= (await getStored(this.storage, "subscriptions", z.array(SubscriptionTarget))) ?? [];
    const now = Date.now();
    const targets = this.subscriptions.filter((t) => hears(t, event.type, event.machine, now));
    if (targets.length === 0) return;
    const id = crypto.randomUUID();
    await this.deliverer.enqueue(targets.map((target) => ({ target, payload: payloadOf(event, target.baseUrl, id, now) })));
    this.announceRecords();
  }

  /** Away for good (past the reconnect grace): told once, and remembered so that its return is told too. */
  async wentAway(machine: string): Promise<void> {
    await this.storage.put("offline-announced", true);
    await this.notify({ type: "machine.offline", machine });
  }

  /** Connected again: "is back" only to those who were told it went away, queued off the connect's path. */
  async cameBack(machine: string): Promise<void> {
    if (!(await getStored(this.storage, "offline-announced", z.boolean()))) return;
    await this.storage.delete("offline-announced");
    this.waitUntil(this.notify({ type: "machine.online", machine }));
  }

  /** The team answered the connect: its subscriptions kept, and "is back" told to those told it went away. */
  async connected({ machine, registered }: Back): Promise<void> {
    if (registered) await this.keep(registered.subscriptions);
    await this.cameBack(machine);
  }

  away(_problem: unknown, machine: string): void {
    this.waitUntil(this.wentAway(machine));
  }

  /** The alarm: send what is due (each retry waits for its own time). */
  runDue(nowMs: number): Promise<void> {
    return this.deliverer.runDue(nowMs);
  }

  nextDueMs(): number | null {
    return this.deliverer.nextDueMs();
  }

  /** The newest delivery attempts of these subscriptions (null: all) made from this machine. */
  list(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return this.deliverer.list(subscriptions, limit);
  }
}
