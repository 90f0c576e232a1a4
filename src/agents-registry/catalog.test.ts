import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FRESH_MS, loadCatalog } from "./catalog";

const REGISTRY = {
  version: "1.0.0",
  agents: [
    { id: "acme-agent", name: "Acme", version: "1.2.0", description: "d", distribution: { npx: { package: "acme-agent@1.2.0" } } },
    { id: "Not Valid", name: "x", version: "1", distribution: {} },
  ],
};

let server: Server | null = null;
const seen: (string | undefined)[] = [];

/** A registry on 127.0.0.1 that answers 304 to its own ETag, as a CDN does. */
async function serveRegistry(): Promise<string> {
  server = createServer((req, res) => {
    seen.push(req.headers["if-none-match"]);
    if (req.headers["if-none-match"] === '"v1"') return void res.writeHead(304).end();
    res.writeHead(200, { "content-type": "application/json", etag: '"v1"' }).end(JSON.stringify(REGISTRY));
  });
  await new Promise<void>((done) => server!.listen(0, "127.0.0.1", done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/registry-${Math.random()}.json`;
}

afterEach(async () => {
  await new Promise((done) => server?.close(done) ?? done(undefined));
  server = null;
  seen.length = 0;
});

describe("loadCatalog", () => {
  it("reads the registry, keeps it fresh for a while, then asks again with its ETag", async () => {
    const url = await serveRegistry();
    const first = await loadCatalog(url, null, 1_000);
    expect(first).toMatchObject({ source: "registry", fetchedAtMs: 1_000, error: null });
    expect(first.agents.map((a) => a.id)).toEqual(["acme-agent"]); // the entry that does not parse is left out, not the catalog
    expect((await loadCatalog(url, null, 2_000)).source).toBe("cache");
    expect(seen).toEqual([undefined]);
    const later = await loadCatalog(url, null, 1_000 + FRESH_MS + 1);
    expect(later).toMatchObject({ source: "registry", fetchedAtMs: 1_000 + FRESH_MS + 1 });
    expect(seen).toEqual([undefined, '"v1"']); // revalidated: a 304, no body
  });

  it("keeps serving what it read when the registry goes away, and the built-in list when it never answered", async () => {
    const url = await serveRegistry();
    await loadCatalog(url, null, 1_000);
    await new Promise((done) => server!.close(done));
    server = null;
    const gone = await loadCatalog(url, null, 1_000 + FRESH_MS + 1);
    expect(gone.source).toBe("stale");
    expect(gone.agents.map((a) => a.id)).toEqual(["acme-agent"]);
    expect(gone.error).toBeTruthy();
    const never = await loadCatalog("http://127.0.0.1:9/never.json", null, 0);
    expect(never.source).toBe("builtin");
    expect(never.agents.map((a) => a.id)).toContain("claude-acp");
  });
});
