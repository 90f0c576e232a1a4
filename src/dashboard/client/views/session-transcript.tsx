/**
 * A session's transcript as it streams (use-session.ts keeps it): agent text rendered as Markdown, a turn's
 * end linked to its changes, the rest as lines of text, and the edits of the turn running now (use-turn.ts).
 * A streaming reply stays in view, unless the person scrolled up to read.
 */
import { useLayoutEffect, useRef } from "preact/hooks";
import type { TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { lazyView } from "../lazy";
import { renderMarkdown } from "../markdown";
import { href } from "../router";
import { entryClass, entryText, turnChangesOf } from "../transcript";
import type { LiveEdit } from "../use-turn";
import { Link } from "./parts";

/** The diff renderer loads with the first edit shown. */
const ToolCallDiff = lazyView(() => import("../diff-view").then((m) => m.ToolCallDiff));

/** Closer than this to the end is "at the end": what arrives keeps it there. */
const AT_END_PX = 40;

export function SessionTranscript(props: {
  id: string;
  cwd: string;
  entries: readonly TranscriptEntry[];
  liveEdits: readonly LiveEdit[];
  /** Changes when a prompt is sent: the transcript goes to its end again. */
  sent: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  // Whether the person is at the end (the last scroll said so): what arrives then keeps it there.
  const stickToEnd = useRef(true);
  useLayoutEffect(() => {
    stickToEnd.current = true;
  }, [props.sent]);
  useLayoutEffect(() => {
    if (stickToEnd.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [props.entries, props.liveEdits]);
  const onScroll = () => {
    const el = box.current;
    if (el) stickToEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < AT_END_PX;
  };
  return (
    <div id="session-transcript" ref={box} role="log" aria-label="transcript" onScroll={onScroll}>
      {props.entries.map((entry) => {
        const changes = entry.kind === "stop" ? turnChangesOf(entry.data) : null;
        return entry.kind === "text" ? (
          // Agent text is Markdown: rendered, then sanitized (markdown.ts); everything else is plain text.
          <div
            key={entry.seq}
            class="entry agent"
            data-seq={entry.seq}
            data-kind={entry.kind}
            dangerouslySetInnerHTML={{ __html: renderMarkdown(entry.text ?? "") }}
          />
        ) : (
          <div key={entry.seq} class={`entry ${entryClass(entry)}`} data-seq={entry.seq} data-kind={entry.kind}>
            {changes ? <Link href={href({ view: "changes", id: props.id, turn: changes.turn })}>{entryText(entry)}</Link> : entryText(entry)}
          </div>
        );
      })}
      {props.liveEdits.map((edit) => (
        <div key={edit.toolCallId} class="entry live-edit" data-kind="edit">
          <div class="muted">{edit.title}</div>
          <ToolCallDiff path={edit.path} cwd={props.cwd} oldText={edit.oldText} newText={edit.newText} />
        </div>
      ))}
    </div>
  );
}
