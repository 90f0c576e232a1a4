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

/** An edit an agent reported (an ACP tool call's `diff` content) as a unified diff. */
export function toolCallDiff(path: string, oldText: string | null, newText: string): string {
  const name = path.split("/").slice(-3).join("/");
  return createTwoFilesPatch(oldText === null ? "/dev/null" : `a/${name}`, `b/${name}`, oldText ?? "", newText, "", "", { context: 3 });
}
