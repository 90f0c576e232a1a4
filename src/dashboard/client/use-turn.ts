/**
 * A turn sent from a session's page: while it runs, the page follows the agent's ACP stream through the
 * relay to answer its file requests (the page's file system is the machine's: file-requests.ts) and to show
 * the edits it reports as they stream (shown, never stored: the transcript keeps the rest).
 */
import { useState } from "preact/hooks";
import type { Session, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { api, machineApi } from "./api";
import { answerFileRequest, fileRequestOf } from "./file-requests";
import { useFollow } from "./follow";

/** An edit the agent reported while its turn streams (an ACP tool call's `diff` content). */
export interface LiveEdit {
  toolCallId: string;
  title: string;
  path: string;
  oldText: string | null;
  newText: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** The `diff` contents of a `session/update` tool call, as edits to show. */
export function editsOf(update: unknown): LiveEdit[] {
  if (!isRecord(update) || (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") || !Array.isArray(update.content)) return [];
  const call = text(update.toolCallId) ?? "";
  return update.content.flatMap((c: unknown, i: number) => {
    if (!isRecord(c) || c.type !== "diff") return [];
    const path = text(c.path);
    const newText = text(c.newText);
    if (path === undefined || newText === undefined) return [];
    return [{ toolCallId: `${call}:${i}`, title: text(update.title) ?? path, path, oldText: text(c.oldText) ?? null, newText }];
  });
}

/** The update a `session/update` notification carries for `sessionId`, or undefined for any other message. */
function updateFor(msg: unknown, sessionId: string): unknown {
  if (!isRecord(msg) || msg.method !== "session/update" || !isRecord(msg.params) || msg.params.sessionId !== sessionId) return undefined;
  return msg.params.update;
}

/** A message to the session's ACP server through the relay. */
export function relay(record: Session, message: object): Promise<Response> {
  return api(`${machineApi(record.machine)}/acp/${encodeURIComponent(record.serverId)}`, {
    method: "POST",
    headers: { accept: "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
}

export interface Turn {
  /** What the agent is editing now, as it streams. */
  liveEdits: LiveEdit[];
  /** A prompt was sent: follow its turn (unless already following), with the transcript as it stands. */
  sent: (entries: readonly TranscriptEntry[]) => void;
}

export function useTurn(record: Session | null): Turn {
  const [liveEdits, setLiveEdits] = useState<LiveEdit[]>([]);
  // Tool calls of earlier turns (the agent's stream replays them): their edits are not shown again.
  const [earlierCalls] = useState(() => new Set<string>());
  // Each prompt sent while no stream is followed opens one (`asked` changes: the same path anew).
  const [asked, setAsked] = useState(0);
  const path = asked > 0 && record ? `${machineApi(record.machine)}/acp/${encodeURIComponent(record.serverId)}` : null;
  const stream = useFollow(
    path,
    (event, data) => {
      if (event !== "message" || !record) return;
      const request = fileRequestOf(data);
      if (request && request.params.sessionId === record.sessionId)
        void answerFileRequest(machineApi(record.machine), request, (reply) => relay(record, reply));
      const edits = editsOf(updateFor(data, record.sessionId)).filter((e) => !earlierCalls.has(e.toolCallId.replace(/:\d+$/, "")));
      if (edits.length > 0) setLiveEdits((list) => [...list.filter((e) => !edits.some((n) => n.toolCallId === e.toolCallId)), ...edits]);
    },
    { again: asked },
  );
  const sent = (entries: readonly TranscriptEntry[]) => {
    setLiveEdits([]);
    for (const entry of entries) {
      const call = entry.kind === "tool_call" ? entry.data?.toolCallId : undefined;
      if (typeof call === "string") earlierCalls.add(call);
    }
    if (asked === 0 || stream.ended) setAsked((n) => n + 1);
  };
  return { liveEdits, sent };
}
