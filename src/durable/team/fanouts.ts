/**
 * The team's fan-outs in progress (docs/architecture.md, "Scale notes"): a change of a team document or
 * of the subscriptions reaches every connected machine a batch per alarm run, and how far each fan-out
 * has come is kept in storage between runs.
 *
 * A run sends its batch by calling other objects, and while it waits another call on the team object
 * may run: a second change then starts its fan-out again from the first machine. Each start is stamped,
 * so the run that was sending neither deletes nor advances past a fan-out started after it read its
 * place: what the newer change brought is sent to every machine, the first ones included.
 */
import { z } from "zod";
import { getStored } from "../storage/stored";

export type FanoutKind = "config-fanout" | "subscriptions-fanout";

/** Where a fan-out has come to, and which start it is (absent in what an older release stored). */
const FanoutPlace = z.object({ after: z.string(), start: z.string().optional() });
type FanoutPlace = z.output<typeof FanoutPlace>;

export class Fanouts {
  constructor(
    private readonly storage: DurableObjectStorage,
    /** Up to `limit` connected machines after `after`, in id order. */
    private readonly connectedAfter: (after: string, limit: number) => string[],
  ) {}

  /** From the first machine again: a change to send (the caller sets the alarm that runs it). */
  async start(kind: FanoutKind): Promise<void> {
    await this.storage.put(kind, { after: "", start: crypto.randomUUID() } satisfies FanoutPlace);
  }

  /** Whether a fan-out of this kind has machines left to reach. */
  async pending(kind: FanoutKind): Promise<boolean> {
    return (await getStored(this.storage, kind, FanoutPlace)) !== undefined;
  }

  /** One batch: `send` to the next `size` connected machines. Answers whether this fan-out has more to send. */
  async batch(kind: FanoutKind, size: number, send: (machine: string) => Promise<void>): Promise<boolean> {
    const place = await getStored(this.storage, kind, FanoutPlace);
    if (!place) return false;
    const ids = this.connectedAfter(place.after, size);
    await Promise.allSettled(ids.map(send));
    // Started again while this batch was sent: that start's place stands (from the first machine).
    const now = await getStored(this.storage, kind, FanoutPlace);
    if (now?.start !== place.start) return now !== undefined;
    if (ids.length < size) {
      await this.storage.delete(kind);
      return false;
    }
    await this.storage.put(kind, { after: ids.at(-1)!, ...(place.start ? { start: place.start } : {}) } satisfies FanoutPlace);
    return true;
  }
}
