/**
 * Agent text as Markdown (a browser module, bundled by scripts/build.ts and served from the worker: no
 * CDN): `marked` renders it, DOMPurify keeps only safe HTML (no script, no event handler, no
 * javascript: link), and links open in a new tab without handing it this page.
 */
import DOMPurify from "dompurify";
import { marked } from "marked";

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

function render(markdown: string): string {
  const html = marked.parse(markdown, { async: false, gfm: true, breaks: true });
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ["style", "form", "input", "button"] });
}

(window as unknown as { AgentRuntimeMarkdown: { render: typeof render } }).AgentRuntimeMarkdown = { render };
