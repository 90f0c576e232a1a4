/**
 * An object has one alarm; several features share it (notifications, deadlines, fan-outs, schedules,
 * held sockets' expiry: docs/architecture.md, "Features of an object"). Each asks for it by the time it
 * needs (`alarmBy`): the alarm rings by the earliest asked. When it rings, `runAlarm` runs each timed
 * feature's due work, then asks again by the earliest time any of them still needs.
 */
export async function alarmBy(storage: DurableObjectStorage, atMs: number): Promise<void> {
  const current = await storage.getAlarm();
  if (current === null || current > atMs) await storage.setAlarm(atMs);
}

/** A feature with work at times of its own: what the object's one alarm runs. */
export interface Timed {
  /** Do what is due by `nowMs` (what is not due stays for a later ring). */
  runDue?(nowMs: number): Promise<void>;
  /** When this feature next needs the alarm (null: nothing waits), asked after every feature ran. */
  nextDueMs?(): number | null | Promise<number | null>;
}

/**
 * The alarm rang: each feature's due work in turn (in the order they were registered), then the alarm
 * again by the earliest time one still needs. Through `alarmBy`: never later than an alarm a feature set
 * while this run waited (a new deadline, a fan-out started by a call), which a run must not put off.
 */
export async function runAlarm(storage: DurableObjectStorage, features: readonly Timed[]): Promise<void> {
  for (const feature of features) await feature.runDue?.(Date.now());
  let next: number | null = null;
  for (const feature of features) {
    const at = (await feature.nextDueMs?.()) ?? null;
    if (at !== null) next = next === null ? at : Math.min(next, at);
  }
  if (next !== null) await alarmBy(storage, Math.max(next, Date.now()));
}
