/**
 * The worker's static files through the real Workers Static Assets binding (the pool loads wrangler.toml's
 * `[assets]`, dist/static/ as scripts/build.ts wrote it): each route's headers, revalidation, compression.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SIDECAR_PACKAGE_NAME } from "../sidecar-package.generated";

describe("static files", () => {
  it("serves the page at a view's address with its policy, revalidated and unchanged → 304", async () => {
    const page = await SELF.fetch("https://runtime.example/sessions/ses-0123456789abcdef-laptop", { headers: { "accept-encoding": "gzip" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self';");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const html = await page.text();
    expect(html).toMatch(/<script type="module" src="\/assets\/dashboard\.[A-Z0-9]+\.js"><\/script>/);
    const etag = page.headers.get("etag");
    expect(etag).toBeTruthy();
    const again = await SELF.fetch("https://runtime.example/sessions", { headers: { "if-none-match": etag ?? "" } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    // A script named in the page: cached for good, and offered compressed.
    const script = /src="(\/assets\/[^"]+)"/.exec(html)![1]!;
    const asset = await SELF.fetch(`https://runtime.example${script}`, { headers: { "accept-encoding": "gzip" } });
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(asset.headers.get("content-encoding")).toBe("gzip");
    expect(asset.headers.get("vary")).toContain("accept-encoding");
    expect((await asset.text()).length).toBeGreaterThan(10_000);
  });

  it("answers a file the build did not make, or the page's own file name, with a problem", async () => {
    for (const path of ["/assets/dashboard.NOPE.js", "/index.html", "/sidecar/x.tgz"]) {
      const res = await SELF.fetch(`https://runtime.example${path}`);
      expect([path, res.status, res.headers.get("content-type")]).toEqual([path, 404, "application/problem+json"]);
    }
  });

  it("answers an unknown address with the page and 404 to a browser, however it asks", async () => {
    const res = await SELF.fetch("https://runtime.example/nope", { headers: { accept: "text/html", "if-none-match": "*" } });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('<div id="root"></div>');
  });

  it("serves the sidecar package the connect command installs: a gzipped tarball, never recompressed", async () => {
    const res = await SELF.fetch(`https://runtime.example/v1/sidecar/${SIDECAR_PACKAGE_NAME}`, { headers: { "accept-encoding": "gzip" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-encoding")).toBeNull();
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);
    expect((await SELF.fetch("https://runtime.example/v1/sidecar/agent-runtime-sidecar-0.0.0.tgz")).status).toBe(404);
  });
});
