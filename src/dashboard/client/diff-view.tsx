/**
 * A diff on any screen (docs/architecture.md, "Review and ship"): git's unified diff, or an ACP tool
 * call's old and new text, rendered by diff2html line by line. Every line keeps its `+` or `−` sign (not
 * colour alone); long lines wrap inside the diff, so the page never scrolls sideways. diff2html escapes
 * the file's text before it becomes HTML.
 */
import { createTwoFilesPatch } from "diff";
import { html } from "diff2html";

export function DiffBlock(props: { unified: string; id?: string }) {
  const rendered = html(props.unified, { outputFormat: "line-by-line", drawFileList: false, matching: "none", diffMaxChanges: 5_000 });
  return <div id={props.id} class="diff" dangerouslySetInnerHTML={{ __html: rendered }} />;
}

/** A path as the session sees it: relative to its folder when inside it (agents report absolute paths). */
export function pathInFolder(path: string, cwd: string): string {
  const folder = cwd.replace(/\/+$/, "");
  return folder.startsWith("/") && path.startsWith(`${folder}/`) ? path.slice(folder.length + 1) : path;
}

/**
 * An edit an agent reported (an ACP tool call's `diff` content), shown as git shows it: a file that did not
 * exist is a new file (git's `new file mode` header, which diff2html tags "added", not a rename from
 * /dev/null), and its path is relative to the session's folder.
 */
export function ToolCallDiff(props: { path: string; cwd: string; oldText: string | null; newText: string }) {
  const name = pathInFolder(props.path, props.cwd);
  const created = props.oldText === null;
  const patch = createTwoFilesPatch(created ? "/dev/null" : `a/${name}`, `b/${name}`, props.oldText ?? "", props.newText, "", "", { context: 3 });
  // createTwoFilesPatch starts with a "===" rule; git's header goes in its place.
  const hunks = patch.slice(patch.indexOf("\n---") + 1);
  const header = `diff --git a/${name} b/${name}\n${created ? "new file mode 100644\n" : ""}`;
  return <DiffBlock unified={header + hunks} />;
}
