/**
 * One session at its own address: its question first (answered here), the transcript live, a prompt box,
 * and continue/close. Prompts go through the relay, which brings the agent back if its process is gone.
 */
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { PendingRequest, Session, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { api, byId, errorText, followSse, machineApi, must, typed } from "../api";
import { type AgentRequest, answerFileRequest, isFileRequest } from "../file-requests";
import { renderMarkdown } from "../markdown";
import { href, navigate } from "../router";
import { useCan } from "../session-context";
import { SessionSandboxPanel } from "./sandbox";
import { deadlineText, entryClass, entryText, turnChangesOf, withEntry } from "../transcript";
import { lazyView } from "../lazy";
import { summaryText } from "@agent-runtime/protocol/review-text";
import { Link } from "./parts";
import { SessionPorts } from "./ports";
import { SessionAway } from "./session-away";
import { costText, SessionAsks } from "./session-asks";

/** An edit the agent reported while its turn streams (an ACP tool call's `diff` content): shown, never stored. */
interface LiveEdit {
  toolCallId: string;
  title: string;
  path: string;
  oldText: string | null;
  newText: string;
}

/** The diff renderer loads with the first edit shown. */
const ToolCallDiff = lazyView(() => import("../diff-view").then((m) => m.ToolCallDiff));

/** The `diff` contents of a `session/update` tool call, as edits to show. */
function editsOf(update: unknown): LiveEdit[] {
  const u = update as { sessionUpdate?: string; toolCallId?: string; title?: string; content?: unknown };
  if ((u?.sessionUpdate !== "tool_call" && u?.sessionUpdate !== "tool_call_update") || !Array.isArray(u.content)) return [];
  return u.content.flatMap((c: { type?: string; path?: string; oldText?: string | null; newText?: string }, i: number) =>
    c?.type === "diff" && typeof c.path === "string" && typeof c.newText === "string"
      ? [{ toolCallId: `${u.toolCallId ?? ""}:${i}`, title: u.title ?? c.path, path: c.path, oldText: c.oldText ?? null, newText: c.newText }]
      : [],
  );
}

const sessionPath = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;

/** After a lost stream the page tries again after 1 s, then 2, 4, … up to 30 s between tries. */
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;

/** A message to the session's ACP server through the relay. */
function relay(record: Session, message: object): Promise<Response> {
  return api(`${machineApi(record.machine)}/acp/${encodeURIComponent(record.serverId)}`, {
    method: "POST",
    headers: { accept: "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
}

export function SessionView(props: { id: string; onChange: () => void }) {
  const [record, setRecord] = useState<Session | null>(null);
  const [entries, setEntries] = useState<TranscriptEntry[]>([]);
  const [message, setMessage] = useState("");
  const [text, setText] = useState("");
  const canAct = useCan("member");
  const box = useRef<HTMLDivElement>(null);
  const stickToEnd = useRef(true);
  const serving = useRef<AbortController | null>(null);
  const [liveEdits, setLiveEdits] = useState<LiveEdit[]>([]);
  /** Whether the live transcript is there, in words (empty: it is). */
  const [connection, setConnection] = useState("");
  const [confirmClose, setConfirmClose] = useState(false);
  /** Tool calls of earlier turns (the agent's stream replays them): their edits are not shown again. */
  const earlierCalls = useRef(new Set<string>());

  // The record, then the transcript live: entries by sequence, the record again when its state changes.
  useEffect(() => {
    const controller = new AbortController();
    let maxSeq = 0;
    setRecord(null);
    setEntries([]);
    setConnection("");
    setMessage("");
    const atEnd = () => {
      const el = box.current;
      return !el || el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    };
    (async () => {
      try {
        setRecord(await must(typed.GET("/v1/sessions/{id}", byId(props.id))));
      } catch (err) {
        setMessage(navigator.onLine ? errorText(err) : "Offline, and this session was not opened on this device before.");
        return;
      }
      // What was kept first (without a network the service worker answers with the transcript last seen), then live.
      const seen = await must(typed.GET("/v1/sessions/{id}/transcript", { params: { path: { id: props.id }, query: { after: 0, limit: 1000 } } })).catch(
        () => null,
      );
      if (seen) {
        for (const entry of seen.entries) maxSeq = Math.max(maxSeq, entry.seq);
        setEntries((list) => seen.entries.reduce(withEntry, list));
      }
      let waitMs = RECONNECT_FIRST_MS;
      while (!controller.signal.aborted) {
        try {
          await followSse(
            `${sessionPath(props.id)}/transcript?after=${maxSeq}`,
            (event, data) => {
              stickToEnd.current = atEnd();
              setConnection("");
              waitMs = RECONNECT_FIRST_MS;
              if (event === "entry") {
                const entry = data as TranscriptEntry;
                maxSeq = Math.max(maxSeq, entry.seq);
                setEntries((list) => withEntry(list, entry));
              } else if (event === "session") setRecord(data as Session);
            },
            controller.signal,
          );
        } catch {
          if (controller.signal.aborted) return;
          // The server or the network is gone: what was seen stays, and the page tries again by itself.
          setConnection(`Offline: this is the transcript as last seen. Trying again in ${Math.round(waitMs / 1000)} s.`);
        }
        // The stream ended (idle) or failed: pick it up again where it stopped, waiting longer each time it fails.
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        waitMs = Math.min(waitMs * 2, RECONNECT_MAX_MS);
      }
    })();
    return () => {
      controller.abort();
      serving.current?.abort();
      serving.current = null;
    };
  }, [props.id]);

  // A streaming reply stays in view, unless the person scrolled up to read.
  useLayoutEffect(() => {
    if (stickToEnd.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [entries]);

  /** While a turn runs from this page, answer the agent's file requests (the transcript shows the rest). */
  const serveFileRequests = (r: Session) => {
    if (serving.current) return;
    const controller = new AbortController();
    serving.current = controller;
    followSse(
      `${machineApi(r.machine)}/acp/${encodeURIComponent(r.serverId)}`,
      (event, data) => {
        const msg = data as AgentRequest;
        if (event === "message" && isFileRequest(msg) && msg.params.sessionId === r.sessionId) {
          void answerFileRequest(machineApi(r.machine), msg, (reply) => relay(r, reply));
        }
        const update = data as { method?: string; params?: { sessionId?: string; update?: unknown } };
        if (event === "message" && update.method === "session/update" && update.params?.sessionId === r.sessionId) {
          const edits = editsOf(update.params.update).filter((e) => !earlierCalls.current.has(e.toolCallId.replace(/:\d+$/, "")));
          if (edits.length > 0) setLiveEdits((list) => [...list.filter((e) => !edits.some((n) => n.toolCallId === e.toolCallId)), ...edits]);
        }
      },
      controller.signal,
    )
      .catch(() => {})
      .finally(() => {
        if (serving.current === controller) serving.current = null;
      });
  };

  const prompt = async (e: Event) => {
    e.preventDefault();
    const said = text.trim();
    if (!record || !said) return;
    setText("");
    setMessage("");
    setLiveEdits([]);
    for (const entry of entries) if (entry.kind === "tool_call" && typeof entry.data?.toolCallId === "string") earlierCalls.current.add(entry.data.toolCallId);
    stickToEnd.current = true;
    serveFileRequests(record);
    // Through the session's queue: sent now when the machine is there, else when it is back (in order, once).
    try {
      // A queued prompt shows in the waiting list (and why, while the machine is away), not in a message that outlives it.
      await must(typed.POST("/v1/sessions/{id}/prompt", { ...byId(props.id), body: { prompt: said } }));
    } catch (err) {
      setMessage(errorText(err));
    }
  };

  const [answering, setAnswering] = useState(false);
  useEffect(() => setAnswering(false), [record?.pending?.requestId]);
  const answer = async (requestId: PendingRequest["requestId"], optionId: string) => {
    setAnswering(true);
    try {
      await must(typed.POST("/v1/sessions/{id}/permission", { ...byId(props.id), body: { requestId, optionId } }));
    } catch (err) {
      setMessage(errorText(err));
    }
  };

  const act = (work: () => Promise<void>) => () => work().catch((err) => setMessage(errorText(err)));
  const cancelQueued = (entry: string) =>
    act(async () => void (await must(typed.DELETE("/v1/sessions/{id}/queue/{entry}", { params: { path: { id: props.id, entry } } }))));
  const closed = record?.state === "closed";
  const turning = record?.state === "running" || record?.state === "waiting";

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
        <p class="row">
          <Link id="session-changes" class="button" href={href({ view: "changes", id: props.id, turn: null })}>
            Changes{record.lastChanges ? ` · last turn ${summaryText(record.lastChanges)}` : ""}
          </Link>
        </p>
      ) : null}
      {record ? <SessionPorts machine={record.machine} serverId={record.serverId} state={record.state} /> : null}
      {record ? <SessionSandboxPanel sandbox={record.sandbox} entries={entries} /> : null}
      {record ? (
        <p id="session-meta" class="muted">
          {record.machine} · {record.agent}
          {record.agentVersion ? ` ${record.agentVersion}` : ""} · {record.worktree ? `branch ${record.worktree.branch} (from ${record.worktree.base}) · ` : ""}
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
      ) : null}
      {connection ? (
        <p id="session-connection" class="muted" role="status">
          {connection}
        </p>
      ) : null}
      <div id="session-pending">
        {record ? <SessionAsks record={record} canAct={canAct} onError={setMessage} /> : null}
        {record?.pending && record.pending.kind !== "elicitation" ? (
          <div class="permission">
            <div>
              The agent asks: {record.pending.title}
              {deadlineText(record.pending.deadline)}
            </div>
            {canAct ? (
              <div class="row">
                {record.pending.options.map((option) => (
                  <button
                    key={option.optionId}
                    type="button"
                    data-answer={option.optionId}
                    class={option.kind.startsWith("allow") ? "primary" : ""}
                    disabled={answering}
                    onClick={() => answer(record.pending!.requestId, option.optionId)}
                  >
                    {option.name}
                  </button>
                ))}
              </div>
            ) : null}
          </div>
        ) : null}
      </div>
      <div id="session-transcript" ref={box} role="log" aria-label="transcript">
        {entries.map((entry) =>
          entry.kind === "text" ? (
            // Agent text is Markdown: rendered, then sanitized (markdown.ts); everything else is plain text.
            <div
              key={entry.seq}
              class="entry agent"
              data-seq={entry.seq}
              data-kind={entry.kind}
              dangerouslySetInnerHTML={{ __html: renderMarkdown(entry.text ?? "") }}
            />
          ) : entry.kind === "stop" && turnChangesOf(entry.data) ? (
            <div key={entry.seq} class={`entry ${entryClass(entry)}`} data-seq={entry.seq} data-kind={entry.kind}>
              <Link href={href({ view: "changes", id: props.id, turn: turnChangesOf(entry.data)!.turn })}>{entryText(entry)}</Link>
            </div>
          ) : (
            <div key={entry.seq} class={`entry ${entryClass(entry)}`} data-seq={entry.seq} data-kind={entry.kind}>
              {entryText(entry)}
            </div>
          ),
        )}
        {liveEdits.map((edit) => (
          <div key={edit.toolCallId} class="entry live-edit" data-kind="edit">
            <div class="muted">{edit.title}</div>
            <ToolCallDiff path={edit.path} cwd={record?.cwd ?? ""} oldText={edit.oldText} newText={edit.newText} />
          </div>
        ))}
      </div>
      {record ? <SessionAway record={record} canAct={canAct} cancel={cancelQueued} /> : null}
      {canAct && record ? (
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
                setMessage("starting a new session…");
                const next = await must(typed.POST("/v1/sessions/{id}/continue", byId(props.id)));
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
                    setRecord(await must(typed.DELETE("/v1/sessions/{id}", byId(props.id))));
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
      <p id="session-msg" class="muted">
        {message}
      </p>
    </section>
  );
}
