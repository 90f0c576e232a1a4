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

/** An edit an agent reported (an ACP tool call's `diff` content), shown as a unified diff. */
export function ToolCallDiff(props: { path: string; oldText: string | null; newText: string }) {
  const name = props.path.split("/").slice(-3).join("/");
  const unified = createTwoFilesPatch(props.oldText === null ? "/dev/null" : `a/${name}`, `b/${name}`, props.oldText ?? "", props.newText, "", "", {
    context: 3,
  });
  return <DiffBlock unified={unified} />;
}
