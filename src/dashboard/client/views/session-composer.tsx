/**
 * What a person sends a session, under its transcript: the prompts waiting for the machine (each with
 * Cancel, session-away.tsx), the prompt box (through the session's queue: sent now when the machine is
 * there, else when it is back, in order, once), Cancel turn, and continue or close.
 */
import { useState } from "preact/hooks";
import type { Session } from "@agent-runtime/protocol/sessions";
import { ApiError, byId, errorText, must, typed } from "../api";
import { href, navigate } from "../router";
import { relay } from "../use-turn";
import { SessionAway } from "./session-away";

export function SessionComposer(props: {
  record: Session;
  canAct: boolean;
  /** A prompt is on its way (the view follows its turn). */
  onSent: () => void;
  /** The record after a change made here (a close). */
  onRecord: (record: Session) => void;
  /** The sessions list changed (one continued or closed). */
  onChange: () => void;
  onMessage: (text: string) => void;
}) {
  const { record } = props;
  const [text, setText] = useState("");
  const [confirmClose, setConfirmClose] = useState(false);
  const act = (work: () => Promise<void>) => () => work().catch((err) => props.onMessage(errorText(err)));
  const cancelQueued = (entry: string) =>
    act(async () => void (await must(typed.DELETE("/v1/sessions/{id}/queue/{entry}", { params: { path: { id: record.id, entry } } }))));
  const closed = record.state === "closed";
  const turning = record.state === "running" || record.state === "waiting";

  const prompt = async (e: Event) => {
    e.preventDefault();
    const said = text.trim();
    if (!said) return;
    // Emptied at once, so a second Enter does not send it twice; put back if it did not go.
    setText("");
    props.onMessage("");
    props.onSent();
    try {
      // A queued prompt shows in the waiting list (and why, while the machine is away), not in a message that outlives it.
      await must(typed.POST("/v1/sessions/{id}/prompt", { ...byId(record.id), body: { prompt: said } }));
    } catch (err) {
      // The prompt goes back in the box, before whatever the person typed there meanwhile. Refused by the
      // API (4xx), it was not sent; lost on the network or a 5xx (an edge's 502, a failure after the
      // worker queued it), it may have been, so the page says it does not know rather than inviting a
      // second send.
      setText((now) => (now.trim() === "" ? text : `${text}\n${now}`));
      props.onMessage(
        err instanceof ApiError && err.status >= 400 && err.status < 500
          ? `${errorText(err)}: not sent, it is back in the box`
          : `${errorText(err)}: it may not have reached the machine; it is back in the box (look at the transcript before you send it again)`,
      );
    }
  };

  return (
    <>
      <SessionAway record={record} canAct={props.canAct} cancel={cancelQueued} />
      {props.canAct ? (
        <>
          <form id="session-form" class="row" onSubmit={prompt}>
            <textarea
              id="session-input"
              class="grow"
              rows={2}
              placeholder="Continue the conversation"
              aria-label="prompt"
              autocomplete="off"
              disabled={closed}
              value={text}
              onInput={(e) => setText(e.currentTarget.value)}
              onKeyDown={(e) => {
                // Enter sends where there is a keyboard; Shift+Enter, and a phone's Enter, start a new line.
                if (e.key === "Enter" && !e.shiftKey && !e.isComposing && !matchMedia("(pointer: coarse)").matches) {
                  e.preventDefault();
                  e.currentTarget.form?.requestSubmit();
                }
              }}
            />
            <button id="session-send" type="submit" class="primary" disabled={closed}>
              Send
            </button>
            <button
              id="session-cancel"
              type="button"
              disabled={!turning}
              onClick={() => relay(record, { method: "session/cancel", params: { sessionId: record.sessionId } })}
            >
              Cancel turn
            </button>
          </form>
          <div class="row">
            <button
              id="session-continue"
              type="button"
              title="a new session in the same folder, primed with this conversation"
              onClick={act(async () => {
                props.onMessage("starting a new session…");
                const next = await must(typed.POST("/v1/sessions/{id}/continue", byId(record.id)));
                props.onChange();
                navigate(href({ view: "session", id: next.id }));
              })}
            >
              Continue in a new session
            </button>
            {confirmClose ? (
              <span class="row" id="session-end-confirm">
                Close it? Its agent stops; the transcript stays.
                <button
                  id="session-end-yes"
                  type="button"
                  onClick={act(async () => {
                    setConfirmClose(false);
                    props.onRecord(await must(typed.DELETE("/v1/sessions/{id}", byId(record.id))));
                    props.onChange();
                  })}
                >
                  Close
                </button>
                <button id="session-end-no" type="button" onClick={() => setConfirmClose(false)}>
                  Keep it
                </button>
              </span>
            ) : (
              <button id="session-end" type="button" disabled={closed} onClick={() => setConfirmClose(true)}>
                Close the session
              </button>
            )}
          </div>
        </>
      ) : null}
    </>
  );
}
