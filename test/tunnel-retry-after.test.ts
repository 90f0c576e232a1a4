/**
 * A real sidecar refused under load (503 with Retry-After) redials no sooner than it was asked
 * (sidecar/tunnel-redial.ts; docs/architecture.md, "What a sidecar does when the worker refuses it").
 */
import { createServer } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSidecar } from "../dev/runtime";

const dials: number[] = [];
let retryAfter = "";
const server = createServer((req, res) => {
  if (!req.url?.startsWith("/_tunnel/")) {
    res.writeHead(404).end();
    return;
  }
  dials.push(Date.now());
  res.writeHead(503, { "content-type": "application/problem+json", ...(retryAfter ? { "retry-after": retryAfter } : {}) });
  res.end(JSON.stringify({ type: "about:blank", title: "Busy", status: 503, detail: "the worker is busy" }));
});
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "retry-after-"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  server.close();
  await rm(dir, { recursive: true, force: true });
});

async function dialsOf(header: string, count: number): Promise<number[]> {
  dials.length = 0;
  retryAfter = header;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sidecar = await startSidecar({ url, machine: "busy", tunnelSecret: "s".repeat(32), dataDir: join(dir, `data-${header || "none"}`), workdir: dir });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${dials.length} dials; logs:\n${sidecar.logs()}`)), 20_000);
      const poll = setInterval(() => {
        if (dials.length < count) return;
        clearTimeout(timer);
        clearInterval(poll);
        resolve();
      }, 20);
    });
    expect(sidecar.logs()).toContain("tunnel refused (503): the worker is busy");
    return dials.slice(0, count);
  } finally {
    await sidecar.stop();
  }
}

describe("a sidecar refused with 503 and Retry-After", () => {
  it("waits at least what the worker asked before dialing again, where it would otherwise redial within the 2 s spread", async () => {
    const asked = await dialsOf("3", 2);
    expect(asked[1]! - asked[0]!).toBeGreaterThanOrEqual(3_000);
    // The same refusal without Retry-After: the first redial within the 2 s spread, the next after 500 ms ±25 %.
    const blind = await dialsOf("", 3);
    expect(blind[1]! - blind[0]!).toBeLessThan(2_500);
    expect(blind[2]! - blind[1]!).toBeLessThan(1_000);
  });
});
