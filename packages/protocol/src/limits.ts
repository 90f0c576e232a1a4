/** Defaults for every limit of the runtime; each one can be overridden (worker vars, sidecar flags). */
export const LIMITS = {
  /** Largest JSON body the worker accepts on any endpoint. */
  maxBodyBytes: 1024 * 1024,
  /** Largest single frame on the tunnel (a bigger ACP message is refused with 413, never cut). */
  maxFrameBytes: 8 * 1024 * 1024,
  /** Files travel through the tunnel in pieces of at most this many bytes (one binary frame each). */
  fileChunkBytes: 1024 * 1024,
  /** Largest file (or tar batch) written or read through the runtime (worker var MAX_FILE_BYTES). */
  maxFileBytes: 256 * 1024 * 1024,
  /** A folder listing stops after this many entries. */
  maxDirEntries: 10_000,
  /** How long a POST waits for the agent's answer before 504. */
  acpTimeoutMs: 300_000,
  /** How long calls in flight wait for a dropped tunnel to come back before 503. */
  reconnectGraceMs: 15_000,
  /** Messages kept per ACP server for readers that attach late or resume (oldest dropped first). */
  acpBufferEvents: 20_000,
  acpBufferBytes: 32 * 1024 * 1024,
  /** SSE comment keep-alive. */
  keepAliveMs: 15_000,
  /** An SSE stream without any event for this long is ended with a `retry:` hint (worker var SSE_IDLE_CLOSE_MS). */
  sseIdleCloseMs: 10 * 60_000,
  /** Sidecar heartbeat on the tunnel (answered by the runtime, not the object); two missed pongs and it redials. */
  heartbeatMs: 20_000,
  /** After the worker went away (a deploy), sidecars wait a random time up to this before redialing, so that
   * thousands of machines do not come back in the same instant. */
  reconnectSpreadMs: 2_000,
} as const;
