/**
 * Commit, push and pull request for a session's folder, with the machine's own git (docs/architecture.md,
 * "Review and ship"). It says what a commit takes: the uncommitted files are listed, those the session
 * changed chosen, the others left out until ticked; the message is suggested from what is chosen; Push and
 * a pull request are offered only where there is a remote; git's refusals are errors with what to do.
 */
import { useEffect, useState } from "preact/hooks";
import type { FileChange, GitStatus } from "@agent-runtime/protocol/review";
import type { Session } from "@agent-runtime/protocol/sessions";
import { ApiError, errorText, must, typed, typedMachine } from "../api";
import { useCan } from "../session-context";
import { gitAdvice, inRepository, suggestedMessage } from "../ship-text";
import { Note } from "./parts";

const STATUS_CHANGE: Record<string, FileChange["status"]> = { "?": "added", A: "added", D: "deleted", R: "renamed" };

/** `version`: changed by the page after something changed the folder (a revert): the status is read again. */
export function Ship(props: { record: Session; version: number }) {
  const { record } = props;
  const git = typedMachine(record.machine);
  const [status, setStatus] = useState<GitStatus | null>(null);
  const [unavailable, setUnavailable] = useState("");
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  /** What the person wrote, once they wrote anything (null until then: the message is the suggestion). */
  const [written, setWritten] = useState<string | null>(null);
  const [note, setNote] = useState<{ text: string; error: boolean }>({ text: "", error: false });
  const [busy, setBusy] = useState(false);
  /**
   * The page's `version` the listed status was read at: until it is read again after a revert, what is
   * listed may be gone, and nothing is committed from it (the button is off from the render that says so).
   */
  const [readAt, setReadAt] = useState(-1);
  const [pullRequest, setPullRequest] = useState<string | null>(null);
  const canAct = useCan("member");
  const reload = async () => {
    const version = props.version;
    try {
      const now = await must(git.GET("/v1/git/status", { params: { query: { cwd: record.cwd } } }));
      // What the session changed (the whole session's changes): chosen at first; anything else waits for a tick.
      const session = await must(typed.GET("/v1/sessions/{id}/changes", { params: { path: { id: record.id }, query: {} } })).catch(() => null);
      const touched = new Set((session?.files ?? []).map((f) => inRepository(f.path, session?.cwd ?? record.cwd, now.root)));
      setChosen(new Set(now.files.map((f) => f.path).filter((p) => touched.has(p))));
      setStatus(now);
      setReadAt(version);
    } catch (err) {
      setUnavailable(err instanceof ApiError && err.status === 422 ? "This folder is not in a git repository: nothing to commit or push." : errorText(err));
    }
  };
  useEffect(() => {
    void reload();
  }, [record.id, props.version]);
  const files = status?.files ?? [];
  const picked = files.filter((f) => chosen.has(f.path));
  const suggestion = suggestedMessage(picked.map((f) => ({ path: f.path, status: STATUS_CHANGE[f.index === "." ? f.worktree : f.index] ?? "modified" })));
  // The suggestion follows the files chosen until the person writes their own. It is derived, not copied
  // into the state by an effect: an effect's copy, run late, could overwrite what the person just typed.
  const message = written ?? suggestion;
  /**
   * `used`: the message a commit took. Once committed it goes back to the suggestion, unless the person
   * changed it while the commit ran; a push or a pull request takes no message, so what is written stays.
   */
  const run = (what: string, work: () => Promise<string>, used?: string) => async () => {
    setBusy(true);
    setNote({ text: `${what}…`, error: false });
    try {
      setNote({ text: await work(), error: false });
      if (used !== undefined) setWritten((now) => (now === used ? null : now));
      await reload();
    } catch (err) {
      const said = errorText(err);
      const advice = gitAdvice(said);
      setNote({ text: advice ? `${said}\n${advice}` : said, error: true });
    } finally {
      setBusy(false);
    }
  };
  if (unavailable) return <p class="muted">{unavailable}</p>;
  if (!status) return <p class="muted">Reading the repository…</p>;
  const where = `${status.branch ?? "a detached HEAD"}${status.upstream ? ` → ${status.upstream}` : ""}`;
  // An older sidecar does not say its remotes: then Push is offered and git says what it finds.
  const canPush = status.remotes === undefined || status.remotes.length > 0;
  const toggle = (path: string) => setChosen((now) => (now.has(path) ? new Set([...now].filter((p) => p !== path)) : new Set([...now, path])));
  return (
    <div id="ship">
      <p id="git-status" class="muted">
        {where} · {files.length} uncommitted {files.length === 1 ? "file" : "files"}
        {status.ahead ? ` · ${status.ahead} to push` : ""}
        {status.behind ? ` · ${status.behind} behind` : ""}
      </p>
      {canAct ? (
        <>
          <form
            id="commit-form"
            class="stack"
            onSubmit={(e) => {
              e.preventDefault();
              void run(
                "committing",
                async () => {
                  const made = await must(git.POST("/v1/git/commit", { body: { cwd: record.cwd, message, paths: picked.map((f) => f.path) } }));
                  return `Committed ${made.summary}`;
                },
                written ?? undefined,
              )();
            }}
          >
            {files.length > 0 ? (
              <fieldset id="commit-files" class="plain">
                <legend>What the commit takes (this session's files are chosen)</legend>
                {files.map((f) => (
                  <label key={f.path} class="check" data-path={f.path}>
                    <input type="checkbox" checked={chosen.has(f.path)} onChange={() => toggle(f.path)} />
                    <span class="path">{f.path}</span>
                  </label>
                ))}
              </fieldset>
            ) : null}
            <textarea id="commit-message" aria-label="commit message" rows={2} value={message} onInput={(e) => setWritten(e.currentTarget.value)} />
            <div class="row">
              <button id="git-commit" type="submit" class="primary" disabled={busy || readAt !== props.version || !message.trim() || picked.length === 0}>
                Commit {picked.length} {picked.length === 1 ? "file" : "files"}
              </button>
              {canPush ? (
                <>
                  <button
                    id="git-push"
                    type="button"
                    disabled={busy || !status.branch}
                    onClick={run("pushing", async () => {
                      const pushed = await must(git.POST("/v1/git/push", { body: { cwd: record.cwd, setUpstream: !status.upstream } }));
                      return `Pushed ${pushed.branch} to ${pushed.remote}`;
                    })}
                  >
                    Push
                  </button>
                  <button
                    id="git-pr"
                    type="button"
                    disabled={busy || !status.branch}
                    onClick={run("opening a pull request", async () => {
                      const base = record.worktree?.base;
                      const pr = await must(
                        git.POST("/v1/git/pull-request", {
                          body: {
                            cwd: record.cwd,
                            title: message.split("\n")[0] || record.title || "Changes by an agent",
                            body: `Made by ${record.agent} in session ${record.id}.`,
                            ...(base ? { base } : {}),
                          },
                        }),
                      );
                      setPullRequest(pr.url);
                      return pr.opened ? "Pull request opened" : (pr.reason ?? "Open the pull request at its page");
                    })}
                  >
                    Open pull request
                  </button>
                </>
              ) : null}
            </div>
            {canPush ? null : (
              <p id="git-no-remote" class="muted">
                No remote to push to: add one on the machine (git remote add origin &lt;url&gt;) to push or open a pull request.
              </p>
            )}
          </form>
          {pullRequest ? (
            <p>
              <a id="git-pr-link" href={pullRequest} target="_blank" rel="noopener noreferrer">
                {pullRequest}
              </a>
            </p>
          ) : null}
        </>
      ) : null}
      <Note id="ship-msg" text={note.text} error={note.error} />
    </div>
  );
}
