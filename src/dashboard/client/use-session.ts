/**
 * One session as its view shows it: the record, then its transcript live (`GET /v1/sessions/{id}/transcript`
 * as a stream: entries by seq, the record again when its state changes). What was kept is shown first
 * (without a network the service worker answers with the transcript last seen), then the stream follows
 * through its drops (follow.ts), resuming where it stopped, so no entry is shown twice.
 */
import { useEffect, useState } from "preact/hooks";
import type { Session, TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { byId, errorText, must, typed } from "./api";
import { type FollowStatus, STREAM_BACKOFF, useFollow } from "./follow";
import { withEntry } from "./transcript";

/**
 * The stream's events are read through the protocol's own schemas, loaded with the stream (the first
 * script carries no schema library: docs/architecture.md, "The dashboard").
 */
type Schemas = typeof import("@agent-runtime/protocol/sessions");

export interface SessionFollowed {
  /** The record (null until read). */
  record: Session | null;
  /** A change this page made (a close answers with the record). */
  setRecord: (record: Session) => void;
  entries: TranscriptEntry[];
  /**
   * What was kept is read (or could not be): a prompt sent from here waits for it, since the turn it starts
   * tells its own edits from those of earlier turns by the transcript's tool calls.
   */
  read: boolean;
  /** Why the session could not be opened ("" when it was). */
  failure: string;
  /** Whether the live transcript is there, in words ("" when it is). */
  connection: string;
}

/**
 * Whether the live transcript is there, in words: while it is down what was seen stays, and the stream is
 * tried again by itself. Without the service or the network it is offline; a refusal is the API's own word.
 */
export function connectionText(stream: FollowStatus): string {
  if (stream.retryInMs === null) return stream.ended && stream.error ? `The live transcript was refused (${stream.error}).` : "";
  const again = `Trying again in ${Math.round(stream.retryInMs / 1000)} s.`;
  return stream.outage ? `Offline: this is the transcript as last seen. ${again}` : `The live transcript was refused (${stream.error}). ${again}`;
}

export function useSession(id: string): SessionFollowed {
  const [record, setRecord] = useState<Session | null>(null);
  const [entries, setEntries] = useState<TranscriptEntry[]>([]);
  const [failure, setFailure] = useState("");
  const [read, setRead] = useState(false);
  // Where the stream starts (after what was kept) and how its events are read: null until both are known.
  const [opened, setOpened] = useState<{ after: number; schemas: Schemas } | null>(null);

  useEffect(() => {
    let current = true;
    setRecord(null);
    setEntries([]);
    setFailure("");
    setRead(false);
    setOpened(null);
    const schemas = import("@agent-runtime/protocol/sessions");
    (async () => {
      try {
        const found = await must(typed.GET("/v1/sessions/{id}", byId(id)));
        if (current) setRecord(found);
      } catch (err) {
        if (current) setFailure(navigator.onLine ? errorText(err) : "Offline, and this session was not opened on this device before.");
        return;
      }
      const seen = await must(typed.GET("/v1/sessions/{id}/transcript", { params: { path: { id }, query: { after: 0, limit: 1000 } } })).catch(() => null);
      if (!current) return;
      if (seen) setEntries((list) => seen.entries.reduce(withEntry, list));
      setRead(true);
      const after = seen?.entries.reduce((max, entry) => Math.max(max, entry.seq), 0) ?? 0;
      const loaded = await schemas.catch(() => null);
      if (!current) return;
      if (loaded) setOpened({ after, schemas: loaded });
      else setFailure("Offline: this is the transcript as last seen. Reload to follow it live.");
    })();
    return () => {
      current = false;
    };
  }, [id]);

  const stream = useFollow(
    opened ? `/v1/sessions/${encodeURIComponent(id)}/transcript?after=${opened.after}` : null,
    (event, data) => {
      if (!opened) return;
      if (event === "entry") {
        const entry = opened.schemas.TranscriptEntry.safeParse(data);
        if (entry.success) setEntries((list) => withEntry(list, entry.data));
      } else if (event === "session") {
        const session = opened.schemas.Session.safeParse(data);
        if (session.success) setRecord(session.data);
      }
    },
    { reconnect: STREAM_BACKOFF },
  );
  return { record, setRecord, entries, read, failure, connection: connectionText(stream) };
}
