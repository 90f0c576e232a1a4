/**
 * The Chromium the bench's browser steps drive (a first visit, the dashboard after a reconnect): Debian's,
 * or CHROMIUM_PATH. `npm run bench` first tries to install it as `npm test` does (scripts/ensure-chromium.sh
 * --optional, its `prebench`); where it still is not there, those steps are skipped and the report says so,
 * so that the rest of the bench finishes on a machine without a browser.
 */
import { accessSync, constants } from "node:fs";

/** The browser's path, or null when there is none to run. */
export function chromiumPath(): string | null {
  const path = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return null;
  }
}

export const NO_CHROMIUM = `skipped: no Chromium at ${process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"} ('sudo apt-get install chromium', 'bash scripts/ensure-chromium.sh', or set CHROMIUM_PATH)`;
