/**
 * One session at its own address: what it waits for first (session-pending.tsx), the transcript live
 * (use-session.ts, session-transcript.tsx), what to send it (session-composer.tsx), and what it runs on.
 * Prompts go through the relay, which brings the agent back if its process is gone; while a turn sent from
 * here runs, the page answers the agent's file requests (use-turn.ts).
 */
import { useState } from "preact/hooks";
import { summaryText } from "@agent-runtime/protocol/review-text";
import { href } from "../router";
import { useCan } from "../session-context";
import { useSession } from "../use-session";
import { useTurn } from "../use-turn";
import { Link } from "./parts";
import { SessionPorts } from "./ports";
import { costText } from "./session-asks";
import { SessionComposer } from "./session-composer";
import { SessionPending } from "./session-pending";
import { SessionSandboxPanel } from "./session-sandbox";
import { SessionTranscript } from "./session-transcript";

export function SessionView(props: { id: string; onChange: () => void }) {
  // Another session is another page: nothing of this one (its stream, a message, a draft) carries over.
  return <SessionPage key={props.id} id={props.id} onChange={props.onChange} />;
}

function SessionPage(props: { id: string; onChange: () => void }) {
  const { record, setRecord, entries, read, failure, connection } = useSession(props.id);
  const turn = useTurn(record);
  const [message, setMessage] = useState("");
  const [sent, setSent] = useState(0);
  const canAct = useCan("member");

  return (
    <section id="session-view">
      <div class="row">
        <h2 id="session-title" class="grow clamp">
          {record ? record.title || "(no prompt yet)" : "Session"}
        </h2>
        {record ? (
          <span id="session-state" class={`badge ${record.state}`}>
            {record.state}
          </span>
        ) : null}
        <Link id="session-close-view" class="button" href={href({ view: "sessions" })}>
          Back
        </Link>
      </div>
      {record ? (
        <>
          <p class="row">
            <Link id="session-changes" class="button" href={href({ view: "changes", id: props.id, turn: null })}>
              Changes{record.lastChanges ? ` · last turn ${summaryText(record.lastChanges)}` : ""}
            </Link>
          </p>
          <SessionPorts machine={record.machine} serverId={record.serverId} state={record.state} />
          <SessionSandboxPanel sandbox={record.sandbox} entries={entries} />
          <p id="session-meta" class="muted">
            {record.machine} · {record.agent}
            {record.agentVersion ? ` ${record.agentVersion}` : ""} ·{" "}
            {record.worktree ? `branch ${record.worktree.branch} (from ${record.worktree.base}) · ` : ""}
            {record.cwd === "." ? "the machine's default folder" : record.cwd} · started by{" "}
            {record.createdBy === "API_TOKEN" ? "the deployment's API token" : record.createdBy} {new Date(record.createdAtMs).toLocaleString()}
            {record.failure ? ` · ${record.failure.message}` : ""}
            <span id="session-cost">{costText(record)}</span>
            {record.continuedFrom ? (
              <>
                {" · continued from "}
                <Link id="session-continued-from" href={href({ view: "session", id: record.continuedFrom })}>
                  an earlier session
                </Link>
              </>
            ) : null}
          </p>
        </>
      ) : null}
      {connection ? (
        <p id="session-connection" class="muted" role="status">
          {connection}
        </p>
      ) : null}
      {record ? <SessionPending record={record} canAct={canAct} onError={setMessage} /> : <div id="session-pending" />}
      <SessionTranscript id={props.id} cwd={record?.cwd ?? ""} entries={entries} liveEdits={turn.liveEdits} sent={sent} />
      {record && read ? (
        <SessionComposer
          record={record}
          canAct={canAct}
          onSent={() => {
            setSent((n) => n + 1);
            turn.sent(entries);
          }}
          onRecord={setRecord}
          onChange={props.onChange}
          onMessage={setMessage}
        />
      ) : null}
      <p id="session-msg" class="muted">
        {message || failure}
      </p>
    </section>
  );
}
