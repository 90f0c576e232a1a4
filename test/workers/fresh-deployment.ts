/**
 * Each workers-tier file starts on an empty deployment. The tier shares one workerd isolate across its
 * files (`isolate: false` in vitest.config.ts: loading the worker is most of a file's time), so what one
 * file stored or left running (Durable Objects' storage, alarms, open sockets) is wiped before the next.
 */
import { reset } from "cloudflare:test";
import { beforeAll } from "vitest";

beforeAll(async () => {
  await reset();
});
