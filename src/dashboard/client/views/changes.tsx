/**
 * A session's Changes (docs/architecture.md, "Review and ship"): the files the whole session or one turn
 * changed, each file's diff asked of the machine when opened, a turn's revert, and shipping the folder:
 * commit, push, pull request. Made for a phone first: one column, diffs that wrap inside themselves.
 */
import { useEffect, useState } from "preact/hooks";
import type { Changes, FileChange, FileDiff } from "@agent-runtime/protocol/review";
import { summaryText } from "@agent-runtime/protocol/review-text";
import type { Session } from "@agent-runtime/protocol/sessions";
import { ApiError, byId, errorText, must, typed } from "../api";
import { DiffBlock } from "../diff-view";
import { href } from "../router";
import { useCan } from "../session-context";
import { Link, Note } from "./parts";
import { Ship } from "./ship";

const STATUS_WORD: Record<FileChange["status"], string> = {
  added: "added",
  modified: "changed",
  deleted: "deleted",
  renamed: "renamed",
  binary: "binary",
  excluded: "left out",
};

function FileRow(props: { session: string; turn: number | null; file: FileChange }) {
  const { file } = props;
  const [open, setOpen] = useState(false);
  const [diff, setDiff] = useState<FileDiff | null>(null);
  const [error, setError] = useState("");
  const diffable = file.status !== "excluded" && file.status !== "binary";
  const toggle = async () => {
    setOpen(!open);
    if (open || diff || !diffable) return;
    try {
      const query = { path: file.path, ...(props.turn ? { turn: props.turn } : {}) };
      setDiff(await must(typed.GET("/v1/sessions/{id}/changes/diff", { params: { path: { id: props.session }, query } })));
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <li class="change" data-path={file.path} data-status={file.status}>
      <button type="button" class="file-row" aria-expanded={open} onClick={toggle}>
        <span class={`badge status-${file.status}`}>{STATUS_WORD[file.status]}</span>
        <span class="grow path">{file.previousPath ? `${file.previousPath} → ${file.path}` : file.path}</span>
        {diffable ? (
          <span class="counts">
            <span class="plus">+{file.additions}</span> <span class="minus">−{file.deletions}</span>
          </span>
        ) : null}
      </button>
      {open ? (
        <div class="change-body">
          {file.reason ? <p class="muted">Not snapshotted: {file.reason}.</p> : null}
          {file.status === "binary" ? <p class="muted">A binary file: no line diff.</p> : null}
          {error ? <p class="muted">{error}</p> : null}
          {diff?.tooLarge ? <p class="muted">The diff is {Math.round(diff.bytes / 1024)} KiB, too large to show here: open the file in Files.</p> : null}
          {diff?.diff ? <DiffBlock unified={diff.diff} /> : null}
          {diff?.diff === "" ? <p class="muted">Only its mode changed.</p> : null}
        </div>
      ) : null}
    </li>
  );
}

export function ChangesView(props: { id: string; turn: number | null }) {
  const [record, setRecord] = useState<Session | null>(null);
  const [changes, setChanges] = useState<Changes | null>(null);
  const [note, setNote] = useState("");
  const [conflict, setConflict] = useState<string[] | null>(null);
  const [confirming, setConfirming] = useState(false);
  /** The turn this page reverted: its list is what it was, and it is not offered again. */
  const [reverted, setReverted] = useState<number | null>(null);
  /** Bumped after the folder changed here (a revert): the git status is read again. */
  const [shipVersion, setShipVersion] = useState(0);
  const canAct = useCan("member");
  const load = async () => {
    setChanges(null);
    try {
      setRecord(await must(typed.GET("/v1/sessions/{id}", byId(props.id))));
      setChanges(await must(typed.GET("/v1/sessions/{id}/changes", { params: { path: { id: props.id }, query: props.turn ? { turn: props.turn } : {} } })));
    } catch (err) {
      setNote(errorText(err));
    }
  };
  useEffect(() => {
    setNote("");
    setConflict(null);
    setConfirming(false);
    void load();
  }, [props.id, props.turn]);

  const revert = async (force: boolean) => {
    if (!props.turn) return;
    setNote(`reverting turn ${props.turn}…`);
    try {
      const done = await must(typed.POST("/v1/sessions/{id}/revert", { ...byId(props.id), body: { turn: props.turn, force } }));
      setConflict(null);
      setConfirming(false);
      setReverted(props.turn);
      setNote(`Turn ${props.turn} reverted: ${done.restored.length} put back, ${done.removed.length} removed.`);
      setShipVersion((v) => v + 1);
      await load();
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        const files = err.problem?.files;
        setConflict(Array.isArray(files) ? files.map(String) : [err.message]);
        setNote("");
      } else setNote(errorText(err));
    }
  };

  const turns = changes?.turns ?? record?.lastChanges?.turn ?? 0;
  return (
    <section id="changes-view">
      <div class="row">
        <h2 class="grow clamp">Changes{props.turn ? ` in turn ${props.turn}` : ""}</h2>
        <Link id="changes-back" class="button" href={href({ view: "session", id: props.id })}>
          Back
        </Link>
      </div>
      {record ? (
        <p class="muted clamp">
          {record.title ?? "(no prompt yet)"} · {record.worktree ? `branch ${record.worktree.branch} · ` : ""}
          {record.cwd}
        </p>
      ) : null}
      <nav id="changes-turns" class="chips" aria-label="turns">
        <Link href={href({ view: "changes", id: props.id, turn: null })} aria-current={props.turn === null ? "page" : undefined}>
          Whole session
        </Link>
        {Array.from({ length: turns }, (_, i) => i + 1).map((n) => (
          <Link key={n} href={href({ view: "changes", id: props.id, turn: n })} aria-current={props.turn === n ? "page" : undefined}>
            Turn {n}
          </Link>
        ))}
      </nav>
      {changes ? (
        <>
          <p id="changes-totals">
            <strong>{summaryText(changes.totals)}</strong>
            {changes.truncated ? " (the first files are listed)" : ""}
          </p>
          {changes.unavailable ? <p class="muted">{changes.unavailable}</p> : null}
          {changes.files.length === 0 && !changes.unavailable ? (
            <p class="muted">{changes.turns === 0 ? "No turn has run here yet." : "Nothing changed."}</p>
          ) : null}
          <ul id="changes-files" class="plain">
            {changes.files.map((file) => (
              <FileRow key={`${props.turn}:${file.path}`} session={props.id} turn={props.turn} file={file} />
            ))}
          </ul>
          {props.turn && reverted === props.turn ? (
            <p id="changes-reverted" class="notice">
              Reverted: the files above are as they were before turn {props.turn}.
            </p>
          ) : props.turn && canAct && changes.files.length > 0 ? (
            confirming ? (
              <div id="changes-revert-confirm" class="permission">
                <p>Revert turn {props.turn}? On the machine:</p>
                <ul>
                  {changes.files.map((f) => (
                    <li key={f.path}>
                      {f.path}: {f.status === "added" ? "removed (the turn created it)" : `put back as it was before turn ${props.turn}`}
                    </li>
                  ))}
                </ul>
                <div class="row">
                  <button id="changes-revert-yes" type="button" class="primary" onClick={() => revert(false)}>
                    Revert
                  </button>
                  <button id="changes-revert-no" type="button" onClick={() => setConfirming(false)}>
                    Keep them
                  </button>
                </div>
              </div>
            ) : (
              <div class="row">
                <button id="changes-revert" type="button" onClick={() => setConfirming(true)}>
                  Revert this turn…
                </button>
              </div>
            )
          ) : null}
          {conflict ? (
            <div id="changes-conflict" class="permission">
              <p>
                Changed since turn {props.turn}: {conflict.join(", ")}. Reverting loses those changes.
              </p>
              <button id="changes-revert-force" type="button" onClick={() => revert(true)}>
                Revert anyway
              </button>
            </div>
          ) : null}
        </>
      ) : null}
      <Note id="changes-msg" text={note} />
      {record ? (
        <>
          <h3>Ship</h3>
          <Ship record={record} version={shipVersion} />
        </>
      ) : null}
    </section>
  );
}
