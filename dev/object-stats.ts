/** What the instrumented worker's objects answer to `debugStats()` (dev/instrumented-worker.ts). */
export interface ObjectStats {
  invocations: { fetch: number; message: number; close: number; alarm: number; rpc: number };
  /** SQL statements that change rows, and key-value puts and deletes. */
  writes: number;
  /**
   * Of the messages, the sidecar's `ports` frames: it tells when what listens on its machine changed, and on
   * a machine shared with other work (a laptop, a test run) that happens while the tunnel is otherwise idle.
   */
  portsFrames: number;
  /** When the runtime last answered the sidecar's ping by itself (machine objects). */
  lastPingMs: number | null;
}
