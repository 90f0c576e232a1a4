/**
 * The team object's fan-outs as a timed feature (storage/alarm.ts): each alarm run sends one batch of each
 * fan-out in progress (team documents, then subscriptions), and asks to run again at once while one has
 * machines left, so no run comes near the platform's limits however many machines there are.
 */
import type { Timed } from "../storage/alarm";
import type { FanoutKind, Fanouts } from "./fanouts";

/** Machines per alarm run of the configuration fan-out and of the liveness refresh. */
export const FANOUT_BATCH = 200;

/** What each fan-out sends to one machine, made once per run (the documents are read only when a change is being fanned out). */
export type FanoutSends = Record<FanoutKind, () => Promise<(machine: string) => Promise<void>>>;

export class FanoutRuns implements Timed {
  constructor(
    private readonly fanouts: Fanouts,
    private readonly sends: FanoutSends,
  ) {}

  async runDue(): Promise<void> {
    for (const kind of ["config-fanout", "subscriptions-fanout"] as const)
      if (await this.fanouts.pending(kind)) await this.fanouts.batch(kind, FANOUT_BATCH, await this.sends[kind]());
  }

  /** Now, while a fan-out has machines left. */
  async nextDueMs(): Promise<number | null> {
    const more = (await this.fanouts.pending("config-fanout")) || (await this.fanouts.pending("subscriptions-fanout"));
    return more ? Date.now() : null;
  }
}
