/**
 * Chromium for the browser tests (Debian's, driven by playwright-core), and what every view must hold on a
 * phone and a desktop.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type Browser, type Page } from "playwright-core";
import { expect } from "vitest";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run 'bash scripts/ensure-chromium.sh' (Debian package 'chromium')`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/**
 * Nothing is wider than the screen (what scrolls inside its own box, a wide code block or the terminal,
 * is contained), and on a phone every control a thumb uses is at least 44 px tall.
 */
export async function fits(p: Page, width: number, phone: boolean): Promise<void> {
  const overflowing = await p.evaluate((limit) => {
    const out: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>("body *")) {
      if (!el.getClientRects().length) continue;
      let contained = false;
      for (let a = el.parentElement; a; a = a.parentElement) if (/(auto|scroll|hidden)/.test(getComputedStyle(a).overflowX)) contained = true;
      const r = el.getBoundingClientRect();
      if (!contained && (r.right > limit + 1 || r.width > limit + 1)) out.push(`${el.tagName}#${el.id}.${el.className} ${Math.round(r.width)}`);
    }
    return out;
  }, width);
  expect(overflowing, p.url()).toEqual([]);
  expect(await p.evaluate(() => document.documentElement.scrollWidth), p.url()).toBeLessThanOrEqual(width);
  // The views' nav is one row, the waiting count included.
  const navTops = await p.evaluate(() => [...document.querySelectorAll("nav.main a")].map((a) => Math.round(a.getBoundingClientRect().top)));
  expect(new Set(navTops).size, `${p.url()}: the nav wraps`).toBeLessThanOrEqual(1);
  if (!phone) return;
  const small = await p.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>("button, input, select, textarea, a")]
      .filter((el) => el.getClientRects().length > 0 && !el.closest("#session-transcript") && !el.closest(".xterm"))
      .filter((el) => el.getBoundingClientRect().height < 44)
      .map((el) => `${el.tagName}#${el.id} ${el.textContent?.trim().slice(0, 20)} ${Math.round(el.getBoundingClientRect().height)}`),
  );
  expect(small, p.url()).toEqual([]);
}

/** axe-core (from npm), put into a page by the DevTools protocol (the dashboard's CSP allows no injected script). */
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * axe-core's checks of the page as it is drawn (WCAG 2.1 A and AA, and its best practices): no violation
 * whose impact is serious or critical. Each is named with the elements it found.
 */
export async function accessible(p: Page): Promise<void> {
  if (!(await p.evaluate(() => "axe" in window))) await p.evaluate(AXE);
  const found = await p.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(context: Document, options: object): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }> };
      }
    ).axe;
    const { violations } = await axe.run(document, { resultTypes: ["violations"] });
    return violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map(
        (v) =>
          `${v.impact} ${v.id}: ${v.nodes
            .map((n) => JSON.stringify(n.target))
            .slice(0, 5)
            .join(" ")}`,
      );
  });
  expect(found, p.url()).toEqual([]);
}
