/**
 * What a session waits for that is not a permission (docs/agents.md, "Logging agents in" and "Questions agents ask"):
 * its agent's login (a terminal login opened in the machine's terminal, a value kept on the machine, or
 * the agent's own flow and the page it asks to open)
 * and the agent's questions (a real form, a link to open); and what its turns cost.
 */
import { useEffect, useState } from "preact/hooks";
import type { ElicitationField, Session } from "@agent-runtime/protocol/sessions";
import { byId, errorText, must, typed } from "../api";
import { AgentLogin } from "./agent-login";

type Answer = "accept" | "decline" | "cancel";

/** The agent's question, as a form a phone can fill in (or a link to open), with its three answers. */
function Question(props: { record: Session; onError: (text: string) => void }) {
  const pending = props.record.pending!;
  const question = pending.elicitation;
  const [values, setValues] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setValues({});
    setBusy(false);
  }, [pending.requestId]);
  const send = async (action: Answer) => {
    setBusy(true);
    try {
      const content = action === "accept" && question?.mode === "form" ? contentOf(question.fields ?? [], values) : undefined;
      await must(
        typed.POST("/v1/sessions/{id}/elicitation", {
          ...byId(props.record.id),
          body: { requestId: pending.requestId, action, ...(content ? { content } : {}) },
        }),
      );
    } catch (err) {
      setBusy(false);
      props.onError(errorText(err));
    }
  };
  return (
    <form
      id="session-question"
      class="permission"
      onSubmit={(e) => {
        e.preventDefault();
        void send("accept");
      }}
    >
      <div>The agent asks: {pending.title}</div>
      {question?.mode === "url" && question.url ? (
        <p>
          <a id="session-question-link" href={question.url} target="_blank" rel="noopener noreferrer">
            Open {new URL(question.url).host}
          </a>
        </p>
      ) : null}
      {(question?.fields ?? []).map((field) => (
        <div key={field.name} class="field">
          <label for={`question-${field.name}`}>
            {field.title ?? field.name}
            {field.required ? " (required)" : ""}
          </label>
          {field.options ? (
            <select
              id={`question-${field.name}`}
              name={field.name}
              value={values[field.name] ?? ""}
              onChange={(e) => setValues({ ...values, [field.name]: e.currentTarget.value })}
            >
              <option value="">—</option>
              {field.options.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          ) : (
            <input
              id={`question-${field.name}`}
              name={field.name}
              type="text"
              inputMode={field.type === "number" || field.type === "integer" ? "decimal" : "text"}
              required={field.required}
              value={values[field.name] ?? ""}
              onInput={(e) => setValues({ ...values, [field.name]: e.currentTarget.value })}
            />
          )}
          {field.description ? <span class="muted">{field.description}</span> : null}
        </div>
      ))}
      <div class="row">
        <button type="submit" class="primary" disabled={busy} data-answer="accept">
          {question?.mode === "url" ? "Done" : "Send"}
        </button>
        <button type="button" disabled={busy} data-answer="decline" onClick={() => void send("decline")}>
          Decline
        </button>
        <button type="button" disabled={busy} data-answer="cancel" onClick={() => void send("cancel")}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** What the form's inputs say, typed as the agent's schema asks (a number field sends a number). */
function contentOf(fields: ElicitationField[], values: Record<string, string>): Record<string, string | number | boolean> {
  const content: Record<string, string | number | boolean> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (value === undefined || value === "") continue;
    content[field.name] = field.type === "number" || field.type === "integer" ? Number(value) : field.type === "boolean" ? value === "true" : value;
  }
  return content;
}

/** The session's question or its agent's login, when it waits for one; nothing otherwise. */
export function SessionAsks(props: { record: Session; canAct: boolean; onError: (text: string) => void }) {
  if (!props.canAct) return null;
  if (props.record.state === "needs_login") {
    const { agent, machine } = props.record;
    return (
      <AgentLogin
        id="session-login"
        agent={agent}
        machine={machine}
        methods={props.record.login?.methods ?? []}
        intro={`${agent} must be logged in on ${machine} first; the session starts once it is.`}
        onError={props.onError}
      />
    );
  }
  if (props.record.pending?.kind === "elicitation") return <Question record={props.record} onError={props.onError} />;
  return null;
}

/** What its turns cost, as the agent reported it: ` · $0.0042 · 1,234 tokens`. */
export function costText(record: Session): string {
  const usage = record.usage;
  if (!usage) return "";
  const tokens = usage.inputTokens + usage.outputTokens;
  const cost = usage.cost
    ? usage.cost.currency === "USD"
      ? `$${usage.cost.amount.toFixed(6).replace(/0{1,4}$/, "")}`
      : `${usage.cost.amount} ${usage.cost.currency}`
    : null;
  return ` · ${cost ? `${cost} · ` : ""}${tokens.toLocaleString("en")} tokens`;
}
