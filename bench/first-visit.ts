/**
 * A first visit on a phone on a slow network (docs/architecture.md, "The dashboard"), in `npm run bench`
 * (alone: BENCH_ONLY=first-visit): Chromium at 390×844 with the network of a slow 4G (1.6 Mbit/s down,
 * 750 kbit/s up, 150 ms round trip), a signed-in person with an empty cache opening /sessions. Reports
 * when the page first showed anything (first contentful paint), when the sessions list was there
 * (usable), and the bytes that crossed the network. Median of five visits.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { newSecret, startSidecar, startWorker } from "../dev/runtime";
import { chromiumPath, NO_CHROMIUM } from "./browser";

export interface FirstVisitFigures {
  firstPaintMs: number;
  usableMs: number;
  transferredKb: number;
  /** The scripts the sessions view ran, as they crossed the network (gzipped), headers included. */
  scriptBytes: number;
  visits: number;
}

const VISITS = 5;
const SLOW_4G = { offline: false, latency: 150, downloadThroughput: (1.6e6 / 8) * 0.9, uploadThroughput: (750e3 / 8) * 0.9 };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The five visits, or null when there is no Chromium to make them with (bench/browser.ts). */
export async function benchFirstVisit(): Promise<FirstVisitFigures | null> {
  const executablePath = chromiumPath();
  if (!executablePath) return null;
  const dir = await mkdtemp(join(tmpdir(), "bench-first-visit-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const worker = await startWorker({ secrets, vars: { ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json" } });
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  const browser = await chromium.launch({ executablePath, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
  try {
    await sidecar.connected();
    const signin = await fetch(`${worker.url}/v1/signin`, { method: "POST", headers: { authorization: `Bearer ${secrets.API_TOKEN}` } });
    const cookie = /ar_signin=([^;]+)/.exec(signin.headers.get("set-cookie") ?? "")?.[1];
    if (!cookie) throw new Error(`no sign-in cookie (${signin.status})`);
    const paints: number[] = [];
    const usable: number[] = [];
    const bytes: number[] = [];
    const scriptBytes: number[] = [];
    for (let i = 0; i < VISITS; i++) {
      // A new context each time: an empty cache, no service worker yet, the sign-in cookie of an earlier visit.
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
      await context.addCookies([{ name: "ar_signin", value: cookie, url: worker.url }]);
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.emulateNetworkConditions", SLOW_4G);
      let transferred = 0;
      let scripts = 0;
      const scriptRequests = new Set<string>();
      cdp.on("Network.responseReceived", (e: { requestId: string; type: string }) => {
        if (e.type === "Script") scriptRequests.add(e.requestId);
      });
      cdp.on("Network.loadingFinished", (e: { requestId: string; encodedDataLength: number }) => {
        transferred += e.encodedDataLength;
        if (scriptRequests.has(e.requestId)) scripts += e.encodedDataLength;
      });
      const started = Date.now();
      await page.goto(`${worker.url}/sessions`, { waitUntil: "commit" });
      await page.waitForSelector("#sessions-list", { timeout: 60_000 });
      usable.push(Date.now() - started);
      const paint = await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? Number.NaN);
      paints.push(paint);
      bytes.push(transferred);
      scriptBytes.push(scripts);
      await context.close();
    }
    return { firstPaintMs: median(paints), usableMs: median(usable), transferredKb: median(bytes) / 1024, scriptBytes: median(scriptBytes), visits: VISITS };
  } finally {
    await browser.close();
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

export function firstVisitReport(f: FirstVisitFigures | null): string {
  if (!f) return `First visit on a phone on slow 4G: ${NO_CHROMIUM}`;
  return [
    `First visit on a phone on slow 4G (1.6 Mbit/s, 150 ms), empty cache, signed in, median of ${f.visits}:`,
    `  first contentful paint   ${f.firstPaintMs.toFixed(0)} ms`,
    `  the sessions list shown  ${f.usableMs.toFixed(0)} ms (goal ≤ 1,500 ms: ${f.usableMs <= 1500 ? "met" : "MISSED"})`,
    `  bytes over the network   ${f.transferredKb.toFixed(0)} KiB, of which scripts ${(f.scriptBytes / 1024).toFixed(0)} KiB (goal ≤ 100 KB: ${f.scriptBytes <= 100_000 ? "met" : "MISSED"})`,
  ].join("\n");
}
