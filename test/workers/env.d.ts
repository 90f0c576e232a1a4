/** What `cloudflare:test`'s `env` holds in the in-process tier (vitest.config.ts, project `workers`): the worker's own bindings. */
import type { Env as WorkerEnv } from "../../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
  }
}
