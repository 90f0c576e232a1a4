/**
 * What a session waits for that is not a permission (docs/agents.md, "Logging agents in" and "Questions agents ask"):
 * its agent's login (a terminal login opened in the machine's terminal, a value kept on the machine, or
 * the agent's own flow and the page it asks to open)
 * and the agent's questions (a real form, a link to open); and what its turns cost.
 */
import { useEffect, useState } from "preact/hooks";
import type { LoginMethod, LoginQuestion } from "@agent-runtime/protocol/logins";
import type { ElicitationField, Session } from "@agent-runtime/protocol/sessions";
import { byId, errorText, must, typed, typedMachine } from "../api";
import { machineHref, navigate } from "../router";
import { usePoll } from "../session-context";

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

/** The ways its agent can be logged in on the session's machine: a terminal opened, or values kept there. */
function Login(props: { record: Session; onError: (text: string) => void }) {
  const { record } = props;
  const methods: LoginMethod[] = record.login?.methods ?? [];
  const [values, setValues] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const api = typedMachine(record.machine);
  // The page the agent's own flow asks a person to open (started here or elsewhere): read from its login.
  const [page, setPage] = useState<LoginQuestion | null>(null);
  const [flowing, setFlowing] = useState(false);
  const readPage = async () => {
    const login = await must(api.GET("/v1/agents/{agent}/login", { params: { path: { agent: record.agent }, query: {} } }));
    setPage(login.pending ?? null);
  };
  usePoll(() => readPage().catch((err) => props.onError(errorText(err))), [record.agent], flowing ? 1000 : 10_000);
  const answerPage = async (action: Answer) => {
    setBusy(true);
    try {
      await must(
        api.POST("/v1/agents/{agent}/login/elicitation", { params: { path: { agent: record.agent } }, body: { requestId: page?.requestId ?? null, action } }),
      );
      setPage(null);
      setFlowing(false);
    } catch (err) {
      props.onError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const logIn = async (method: LoginMethod) => {
    setBusy(true);
    try {
      const body =
        method.type === "env_var"
          ? { method: method.id, values: Object.fromEntries((method.vars ?? []).map((v) => [v, values[v] ?? ""])) }
          : { method: method.id };
      const started = await must(api.POST("/v1/agents/{agent}/login", { params: { path: { agent: record.agent } }, body }));
      if (started.process) navigate(machineHref(record.machine, "terminal", { process: started.process.id }));
      if (method.type === "agent") setFlowing(true);
    } catch (err) {
      props.onError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div id="session-login" class="permission">
      <div>
        {record.agent} must be logged in on {record.machine} first; the session starts once it is.
      </div>
      {page ? (
        <div id="login-page">
          <div>{page.message}</div>
          <p>
            <a id="login-page-link" href={page.url} target="_blank" rel="noopener noreferrer">
              Open {new URL(page.url).host}
            </a>
          </p>
          <div class="row">
            <button type="button" class="primary" disabled={busy} data-answer="accept" onClick={() => void answerPage("accept")}>
              Done
            </button>
            <button type="button" disabled={busy} data-answer="cancel" onClick={() => void answerPage("cancel")}>
              Cancel
            </button>
          </div>
        </div>
      ) : flowing ? (
        <div class="muted">
          {record.agent} is logging in on {record.machine}…
        </div>
      ) : null}
      {methods.map((method) =>
        method.type === "env_var" ? (
          <form
            key={method.id}
            data-method={method.id}
            onSubmit={(e) => {
              e.preventDefault();
              void logIn(method);
            }}
          >
            {(method.vars ?? []).map((name) => (
              <label key={name} class="field">
                {name}
                <input
                  name={name}
                  type="password"
                  autocomplete="off"
                  required
                  value={values[name] ?? ""}
                  onInput={(e) => setValues({ ...values, [name]: e.currentTarget.value })}
                />
              </label>
            ))}
            <button type="submit" disabled={busy}>
              {method.name}: keep on {record.machine}
            </button>
          </form>
        ) : (
          <button key={method.id} type="button" class="primary" data-method={method.id} disabled={busy} onClick={() => void logIn(method)}>
            {method.name}
            {method.type === "terminal" ? " (opens a terminal)" : ""}
          </button>
        ),
      )}
    </div>
  );
}

/** The session's question or its agent's login, when it waits for one; nothing otherwise. */
export function SessionAsks(props: { record: Session; canAct: boolean; onError: (text: string) => void }) {
  if (!props.canAct) return null;
  if (props.record.state === "needs_login") return <Login record={props.record} onError={props.onError} />;
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
