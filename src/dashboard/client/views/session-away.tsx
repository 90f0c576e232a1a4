/**
 * What a session view says while its machine is away, once: what offline means and what happens to what
 * is sent; and the prompts that wait, each with Cancel. Both go when they no longer hold (the machine is
 * back, the prompt ran), since they are drawn from the record the transcript stream keeps current.
 */
import type { Session } from "@agent-runtime/protocol/sessions";

export function SessionAway(props: { record: Session; canAct: boolean; cancel: (entry: string) => () => void }) {
  const { record } = props;
  const away = record.state === "offline";
  return (
    <>
      {away ? (
        <p id="session-offline" class="notice" role="status">
          {record.machine} is offline: its sidecar is not connected to this deployment (asleep, no network, or stopped). What you send now waits here and goes
          to the agent, in order, when {record.machine} is back.
        </p>
      ) : null}
      {record.queued.length > 0 ? (
        <ul id="session-queued" class="plain" aria-label="prompts waiting to be sent">
          {record.queued.map((q) => (
            <li key={q.id} class="row queued" data-queued={q.id}>
              <span class="grow clamp">Waiting: {q.text}</span>
              {props.canAct ? (
                <button type="button" onClick={props.cancel(q.id)}>
                  Cancel
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}
