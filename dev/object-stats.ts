/** What the instrumented worker's objects answer to `debugStats()` (dev/instrumented-worker.ts). */
export interface ObjectStats {
  invocations: { fetch: number; message: number; close: number; alarm: number; rpc: number };
  /** SQL statements that change rows, and key-value puts and deletes. */
  writes: number;
  /** When the runtime last answered the sidecar's ping by itself (machine objects). */
  lastPingMs: number | null;
}
