/**
 * The docs' examples as the tests run them (docs/architecture.md, "Tests"): a page of the docs (README.md
 * or docs/<topic>.md) marks a fenced block with `<!-- example: NAME (run by test/…) -->` on the line
 * before it, and a test runs that block as written. The page is named with the example, so an example
 * that moves to another page fails its test until the test names the page it now lives in.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../dev/runtime";

/** The fenced block right after `<!-- example: NAME ... -->` in `page` (a path from the repository's root). */
export function example(page: string, name: string): string {
  const text = readFileSync(join(ROOT, page), "utf8");
  const markers = [...text.matchAll(new RegExp(`^<!-- example: ${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[ ][^\\n]*\\n`, "gm"))];
  if (markers.length !== 1) throw new Error(`${page} has ${markers.length === 0 ? "no" : "more than one"} example '${name}'`);
  const after = text.slice(markers[0]!.index! + markers[0]![0].length);
  const block = /^```[a-z]*\n([\s\S]*?)^```/m.exec(after);
  if (block?.index !== 0) throw new Error(`${page}: the example '${name}' is not followed by a fenced block`);
  return block[1]!;
}
