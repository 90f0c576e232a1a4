/**
 * The six-hourly liveness refresh (docs/architecture.md, "Idle cost"), a timed feature of the team object
 * (storage/alarm.ts): machines marked connected are asked whether they still are (a deploy can end sockets
 * without a close reaching us), a batch per alarm run, where it has come to kept in storage.
 */
import { z } from "zod";
import type { Timed } from "../storage/alarm";
import { getStored } from "../storage/stored";
import { FANOUT_BATCH } from "./fanout-runs";
import type { MachineRegistry } from "./machine-registry";

/** How often machines marked connected are asked whether they still are: one wake per machine every six hours. */
export const REFRESH_EVERY_MS = 6 * 60 * 60_000;
/** Where the liveness refresh has come to, and when its next round is due. */
const Refresh = z.object({ after: z.string(), dueMs: z.number() });
const KEY = "liveness-refresh";

export class LivenessRefresh implements Timed {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly machines: MachineRegistry,
    /** Whether the machine's object says its sidecar is connected (false when it cannot be asked). */
    private readonly isOnline: (machine: string) => Promise<boolean>,
  ) {}

  async runDue(nowMs: number): Promise<void> {
    const stored = await getStored(this.storage, KEY, Refresh);
    let refresh = stored ?? { after: "", dueMs: nowMs + REFRESH_EVERY_MS };
    if (refresh.dueMs <= Date.now()) {
      const ids = this.machines.connectedAfter(refresh.after, FANOUT_BATCH);
      const online = await Promise.all(ids.map((id) => this.isOnline(id).catch(() => false)));
      ids.forEach((id, i) => {
        if (!online[i]) this.machines.disconnected(id, Date.now());
      });
      refresh = ids.length < FANOUT_BATCH ? { after: "", dueMs: Date.now() + REFRESH_EVERY_MS } : { after: ids.at(-1)!, dueMs: refresh.dueMs };
    }
    if (refresh !== stored) await this.storage.put(KEY, refresh);
  }

  /** Now while a round is part-way through, else its next round. */
  async nextDueMs(): Promise<number | null> {
    const refresh = await getStored(this.storage, KEY, Refresh);
    if (!refresh) return null;
    return refresh.after !== "" ? Date.now() : refresh.dueMs;
  }
}
