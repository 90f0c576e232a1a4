/**
 * What a session waits for from a person, first on its view: a permission the agent asks (answered here),
 * its questions and its agent's login (session-asks.tsx).
 */
import { useEffect, useState } from "preact/hooks";
import type { Session } from "@agent-runtime/protocol/sessions";
import { byId, errorText, must, typed } from "../api";
import { deadlineText } from "../transcript";
import { SessionAsks } from "./session-asks";

export function SessionPending(props: { record: Session; canAct: boolean; onError: (text: string) => void }) {
  const { record, canAct } = props;
  const pending = record.pending?.kind === "elicitation" ? null : record.pending;
  const [answering, setAnswering] = useState(false);
  useEffect(() => setAnswering(false), [pending?.requestId]);
  const answer = async (requestId: NonNullable<Session["pending"]>["requestId"], optionId: string) => {
    setAnswering(true);
    try {
      await must(typed.POST("/v1/sessions/{id}/permission", { ...byId(record.id), body: { requestId, optionId } }));
    } catch (err) {
      props.onError(errorText(err));
    }
  };
  return (
    <div id="session-pending">
      <SessionAsks record={record} canAct={canAct} onError={props.onError} />
      {pending ? (
        <div class="permission">
          <div>
            The agent asks: {pending.title}
            {deadlineText(pending.deadline)}
          </div>
          {canAct ? (
            <div class="row">
              {pending.options.map((option) => (
                <button
                  key={option.optionId}
                  type="button"
                  data-answer={option.optionId}
                  class={option.kind.startsWith("allow") ? "primary" : ""}
                  disabled={answering}
                  onClick={() => answer(pending.requestId, option.optionId)}
                >
                  {option.name}
                </button>
              ))}
            </div>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
