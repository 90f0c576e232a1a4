/**
 * The team's notification subscriptions (docs/architecture.md, "Notifications"): the source of truth,
 * per token; each machine's object holds a copy of those that may hear of it (the team object hands the
 * copies over: see its fan-out).
 */
import { type Subscription, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { type MachineScope, scopeCovers } from "@agent-runtime/protocol/trust";
import { z } from "zod";
import { Count, jsonText, oneRow, rows } from "../storage/stored";

/** Subscriptions one token may hold. */
export const MAX_SUBSCRIPTIONS_PER_OWNER = 50;

/** Who manages a subscription: its owner, or an admin whose scope covers the subscription's. */
export type SubscriptionReach = { owner: string } | { adminOf: MachineScope };

const Stored = z
  .object({ id: z.string(), owner: z.string(), target: jsonText(SubscriptionTarget), created_at: z.number() })
  .transform((r) => ({ id: r.id, owner: r.owner, target: r.target, createdAt: r.created_at }));
type Stored = z.output<typeof Stored>;

function reaches(who: SubscriptionReach, r: { owner: string; target: SubscriptionTarget }): boolean {
  return "owner" in who ? r.owner === who.owner : scopeCovers(who.adminOf, r.target.scope);
}

/** A subscription as its owner reads it: never its secret nor the browser's keys. */
function view(r: Omit<Stored, "id">): Subscription {
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

export class SubscriptionBook {
  constructor(private readonly sql: SqlStorage) {}

  private all(): Stored[] {
    return rows(this.sql, Stored, `SELECT * FROM subscriptions ORDER BY created_at`);
  }

  /** One subscription this caller may manage. */
  reachable(id: string, who: SubscriptionReach): Stored | undefined {
    return this.all().find((r) => r.id === id && reaches(who, r));
  }

  /** The subscriptions that may hear of this machine (what its object keeps). */
  targetsFor(machine: string): SubscriptionTarget[] {
    return this.all()
      .map((r) => r.target)
      .filter((t) => (t.scope === "*" || t.scope.includes(machine)) && (t.machines === null || t.machines.includes(machine)));
  }

  /** Null when the owner holds as many subscriptions as it may. */
  add(owner: string, target: SubscriptionTarget): Subscription | null {
    const held = oneRow(this.sql, Count, `SELECT COUNT(*) AS n FROM subscriptions WHERE owner = ?`, owner).n;
    if (held >= MAX_SUBSCRIPTIONS_PER_OWNER) return null;
    const createdAt = Date.now();
    this.sql.exec(`INSERT INTO subscriptions (id, owner, target, created_at) VALUES (?, ?, ?, ?)`, target.id, owner, JSON.stringify(target), createdAt);
    return view({ owner, target, createdAt });
  }

  /** The subscriptions someone may manage: an owner's own, or (an admin's) those its scope covers. */
  list(who: SubscriptionReach): Subscription[] {
    return this.all()
      .filter((r) => reaches(who, r))
      .map(view);
  }

  /** Mute or unmute one this caller may manage; null when there is none. */
  update(id: string, who: SubscriptionReach, change: { muted?: boolean }): Subscription | null {
    const found = this.reachable(id, who);
    if (!found) return null;
    const target = { ...found.target, ...(change.muted !== undefined ? { muted: change.muted } : {}) };
    this.sql.exec(`UPDATE subscriptions SET target = ? WHERE id = ?`, JSON.stringify(target), id);
    return view({ ...found, target });
  }

  drop(id: string): void {
    this.sql.exec(`DELETE FROM subscriptions WHERE id = ?`, id);
  }

  /** How many of an owner's were removed (a revoked token's end with it). */
  dropAllOf(owner: string): number {
    return this.sql.exec(`DELETE FROM subscriptions WHERE owner = ?`, owner).rowsWritten;
  }
}
