/**
 * An object has one alarm; several features share it (notifications, fan-outs, held sockets' expiry).
 * Each asks for it by the time it needs: the alarm rings by the earliest asked, and each feature's part
 * of the alarm handler asks again for what it still needs.
 */
export async function alarmBy(storage: DurableObjectStorage, atMs: number): Promise<void> {
  const current = await storage.getAlarm();
  if (current === null || current > atMs) await storage.setAlarm(atMs);
}
