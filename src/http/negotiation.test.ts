import { describe, expect, it } from "vitest";
import { accepts, acceptsGzip, prefers } from "./negotiation";

describe("content negotiation", () => {
  it("takes gzip where Accept-Encoding offers it or a wildcard, never where q=0 refuses it", () => {
    expect(acceptsGzip("gzip, deflate, br")).toBe(true);
    expect(acceptsGzip("br;q=1.0, gzip;q=0.8")).toBe(true);
    expect(acceptsGzip("*")).toBe(true);
    expect(acceptsGzip("gzip;q=0")).toBe(false);
    expect(acceptsGzip("identity")).toBe(false);
    expect(acceptsGzip(undefined)).toBe(false);
  });

  it("prefers a page for a browser's navigation, JSON for an API client", () => {
    const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
    expect(prefers(browser, "text/html", "application/json")).toBe(true);
    expect(prefers("*/*", "text/html", "application/json")).toBe(false);
    expect(prefers("application/json", "text/html", "application/json")).toBe(false);
    expect(accepts("text/event-stream", "text/event-stream")).toBe(true);
  });
});
