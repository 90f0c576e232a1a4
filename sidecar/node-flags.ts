/**
 * How Node runs the sidecar wherever the runtime starts it (the service unit, `npm start`, the tests and
 * the benchmark). V8's default young generation (two 16 MB semi-spaces) stays committed after a burst of
 * frames, and was most of the sidecar's private memory; 1 MB semi-spaces keep it near 33 MB with 20 live
 * agent servers instead of 47 MB, at no cost measured in round trip or streaming (bench/README.md).
 * V8's background threads (4 by default: concurrent marking, compiling) each free into a malloc arena of
 * their own, which keeps what it held: 2 threads keep ~3 MB less of it (bench/README.md, "The sidecar's
 * memory with 20 servers").
 */
export const SIDECAR_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1", "--v8-pool-size=2"];
