/** Sign in: the API token is typed once and traded for the worker's sign-in cookie; the page never keeps it. */
import { useState } from "preact/hooks";

export function SignIn(props: { message: string; onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState(props.message);
  const submit = async (e: Event) => {
    e.preventDefault();
    const typed = token.trim();
    setToken("");
    const res = await fetch("/v1/signin", { method: "POST", headers: { authorization: `Bearer ${typed}` }, credentials: "same-origin" }).catch(() => null);
    if (res?.ok) props.onSignedIn();
    else setError(res ? "That token was refused." : "The runtime cannot be reached.");
  };
  return (
    <div id="login">
      <section>
        <h2>Sign in</h2>
        <p class="muted">
          Paste an API token (<code>npm start</code> prints it as <code>token:</code>). It is traded for a sign-in cookie that no script can read, kept across
          tabs and restarts until you sign out.
        </p>
        <form id="login-form" class="row" onSubmit={submit}>
          <input
            id="token"
            class="grow"
            type="password"
            placeholder="API token"
            autocomplete="off"
            aria-label="API token"
            required
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
          <button class="primary" type="submit">
            Sign in
          </button>
        </form>
        <p id="login-error" class="error">
          {error}
        </p>
      </section>
    </div>
  );
}
