/**
 * Logging an agent in from the dashboard (docs/agents.md, "Logging agents in"): shown by a session that waits
 * for its agent's login, and by a machine's agents view for an agent that is not logged in.
 */
import { useState } from "preact/hooks";
import type { LoginMethod, LoginQuestion } from "@agent-runtime/protocol/logins";
import { errorText, must, typedMachine } from "../api";
import { machineHref, navigate } from "../router";
import { usePoll } from "../session-context";

type Answer = "accept" | "decline" | "cancel";

/**
 * The ways an agent can be logged in on a machine: a terminal opened, values kept there, or its own flow
 * (and the page that flow asks a person to open, read from the agent's login: started here or elsewhere).
 */
export function AgentLogin(props: {
  id: string;
  agent: string;
  machine: string;
  methods: LoginMethod[];
  intro: string;
  onError: (text: string) => void;
  /** A login was started or answered: what shows the agent's state reads it again. */
  onChanged?: () => void;
}) {
  const { methods } = props;
  const record = { agent: props.agent, machine: props.machine };
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
      props.onChanged?.();
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
      props.onChanged?.();
    } catch (err) {
      props.onError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div id={props.id} class="permission">
      <div>{props.intro}</div>
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
