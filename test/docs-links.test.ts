/**
 * The docs hold together (docs/architecture.md, "Tests"): every Markdown link and anchor in the docs a
 * reader follows resolves, every code comment that cites a section of the README, a page of docs/ or
 * SECURITY.md names one that exists, and every example a page shows is run by the test it names, read
 * from that page. Pure reads of the tree: no process is started.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
const DOCS = [
  "README.md",
  "SECURITY.md",
  "bench/README.md",
  "sidecar/README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((n) => n.endsWith(".md"))
    .map((n) => `docs/${n}`),
];
/** The docs a code comment may cite by section (`docs/tasks.md, "Schedules"`, `README, "Node versions"`). */
const CITABLE = DOCS.filter((doc) => doc === "README.md" || doc === "SECURITY.md" || doc.startsWith("docs/"));
/**
 * A citation: a citable doc (not inside a longer path, `bench/README.md`, nor a string, `"README.md"`), then
 * the section in double quotes after a comma, a space or a comment's line break.
 */
const CITATION = /(?<![\w/.'"`])(docs\/[\w-]+\.md|SECURITY\.md|README(?:\.md)?)(?:'s)?,?\s+(?:(?:\*|\/\/|#)\s*)?"([^"]+)"/g;
const CODE_ROOTS = ["src", "sidecar", "packages/protocol/src", "scripts", "test", "bench", "dev"];
/**
 * Sections cited by code whose text is being written in this wave: a written-down debt, like the layout
 * check's OVER_THE_LIMIT. An entry whose section exists fails the test until it is taken off the list.
 */
const PENDING_SECTIONS = new Set<string>();

/** Markdown without its fenced blocks and inline code: what is left is what renders as text and links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\- _]/gu, "").replace(/ /g, "-");
}

function headings(markdown: string): string[] {
  return [...markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map((m) => m[1]!);
}

/**
 * What a comment may cite a section by: a heading, or its title before a colon ("Sandboxes" for
 * "Sandboxes: the team's rules"), or a paragraph's bold lead (`**Streams in the tunnel.**`).
 */
function sectionNames(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const heading of headings(markdown)) {
    names.add(heading);
    names.add(heading.split(": ")[0]!);
  }
  for (const m of markdown.matchAll(/^\*\*([^*\n]+?)\.?\*\*/gm)) names.add(m[1]!);
  return names;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  const text = readFileSync(join(ROOT, file), "utf8");
  anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const heading of headings(text)) {
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  anchorCache.set(file, anchors);
  return anchors;
}

/** What does not resolve among a Markdown file's links, as `file: [text](target)`. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  const text = prose(readFileSync(join(ROOT, file), "utf8"));
  for (const m of text.matchAll(/!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[2]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like: outside the tree
    const [path = "", anchor] = target.split("#", 2);
    const to = path === "" ? file : relative(ROOT, resolve(ROOT, dirname(file), decodeURIComponent(path)));
    if (!existsSync(join(ROOT, to))) broken.push(`${file}: [${m[1]}](${target}): no file ${to}`);
    else if (anchor !== undefined && to.endsWith(".md") && !anchorsOf(to).has(decodeURIComponent(anchor)))
      broken.push(`${file}: [${m[1]}](${target}): no heading makes #${anchor} in ${to}`);
  }
  return broken;
}

function codeFiles(dir: string): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...codeFiles(path));
    else if (/\.(ts|tsx|js|mjs|css|html|toml|sh)$/.test(name) && !name.includes(".generated.")) out.push(path);
  }
  return out;
}

/** Code comments citing `docs/architecture.md, "Section"` (or another citable doc) whose section is not there. */
function brokenCitations(): string[] {
  const sections = new Map(CITABLE.map((doc) => [doc, sectionNames(readFileSync(join(ROOT, doc), "utf8"))]));
  const broken: string[] = [];
  for (const pending of PENDING_SECTIONS) {
    const [, doc, section] = /^(.+?), "(.+)"$/.exec(pending)!;
    if (sections.get(doc!)?.has(section!)) broken.push(`${doc}, "${section}" exists now: take it off PENDING_SECTIONS in test/docs-links.test.ts`);
  }
  for (const file of [...CODE_ROOTS.flatMap(codeFiles), "wrangler.toml"]) {
    if (file === "test/docs-links.test.ts") continue; // its own patterns are not citations
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const m of text.matchAll(CITATION)) {
      const doc = m[1] === "README" ? "README.md" : m[1]!;
      const section = m[2]!.replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, " ");
      if (!sections.has(doc)) broken.push(`${file}: cites ${doc}, "${section}": no such page`);
      else if (!sections.get(doc)!.has(section) && !PENDING_SECTIONS.has(`${doc}, "${section}"`))
        broken.push(`${file}: cites ${doc}, "${section}": no such section`);
    }
  }
  return broken;
}

/**
 * Examples whose marker does not name the test that runs it, or whose test does not read it from the page
 * it is on (test/docs-examples.ts: `example(page, name)`).
 */
function unrunExamples(): string[] {
  const unrun: string[] = [];
  for (const doc of DOCS) {
    for (const m of readFileSync(join(ROOT, doc), "utf8").matchAll(/^<!-- example: (\S+)(.*)-->$/gm)) {
      const test = /^ \(run by (test\/[\w.-]+\.ts)\b/.exec(m[2]!)?.[1];
      if (!test || !existsSync(join(ROOT, test))) {
        unrun.push(`${doc}: example '${m[1]}' names no test file that exists ("(run by test/….ts)")`);
        continue;
      }
      const code = readFileSync(join(ROOT, test), "utf8");
      if (!code.includes(`example("${doc}"`) || !code.includes(`"${m[1]}"`)) unrun.push(`${doc}: example '${m[1]}' is not read from ${doc} by ${test}`);
    }
  }
  return unrun;
}

describe("the docs", () => {
  it("link only to files and headings that exist", () => {
    expect(DOCS.flatMap(brokenLinks)).toEqual([]);
  });

  it("are cited by code comments only at sections that exist", () => {
    expect(brokenCitations()).toEqual([]);
  });

  it("show examples that the test they name runs, read from the page they are on", () => {
    expect(unrunExamples()).toEqual([]);
  });

  it("are read as GitHub reads them: anchors from headings, sections by heading, title or bold lead", () => {
    expect(slug("Adding a `team` document: [the recipe](x.md)")).toBe("adding-a-team-document-the-recipe");
    expect(anchorsOf("docs/architecture.md").has("storage")).toBe(true);
    expect(anchorsOf("docs/architecture.md").has("no-such-heading")).toBe(false);
    expect(sectionNames("## Sandboxes: the team's rules\n\n**Streams in the tunnel.** A stream")).toEqual(
      new Set(["Sandboxes: the team's rules", "Sandboxes", "Streams in the tunnel"]),
    );
  });
});
