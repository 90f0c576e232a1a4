/**
 * Schedules and GitHub triggers (docs/architecture.md, "Schedules", "GitHub triggers"), shown with the
 * tasks they start: when each runs next and what its last runs did; a member pauses, resumes or deletes
 * one. Triggers are made with the API (their secret is set on GitHub too); here each shows the URL GitHub
 * sends to and what its last delivery did.
 */
import { useState } from "preact/hooks";
import { type ApiSchema, byId, errorText, must, typed } from "../api";
import { ago, when } from "../format";
import { useCan } from "../session-context";
import { useResource } from "../use-resource";
import { Note, Table } from "./parts";

type Schedule = ApiSchema<"Schedule">;

/** A schedule's last run in words: the task it started, or why it skipped. */
export function lastRunText(schedule: Schedule): string {
  const run = schedule.runs[0];
  if (!run) return "not run yet";
  return `${ago(run.atMs)}: ${run.task ? `started ${run.task}` : `skipped (${run.skipped})`}`;
}

/**
 * A list of the team's records (schedules, triggers): read every 30 s and when `version` changes; a
 * member's call on a row (`act`), then the list read again, or what went wrong in the note.
 */
function useTeamRecords<T>(path: string, read: () => Promise<T>, version: number) {
  const canChange = useCan("member");
  const listed = useResource(path, { read, everyMs: 30_000, again: [version] });
  const [note, setNote] = useState("");
  const act = (work: Promise<unknown>) =>
    work.then(
      () => listed.refetch(),
      (err) => setNote(errorText(err)),
    );
  return { canChange, data: listed.data, note: note || listed.error, act };
}

export function Schedules(props: { version: number }) {
  const { canChange, data, note, act } = useTeamRecords("/v1/schedules", () => must(typed.GET("/v1/schedules")), props.version);
  const schedules = data?.schedules ?? null;
  if (schedules !== null && schedules.length === 0) return null;
  return (
    <>
      <h3>Schedules</h3>
      <Table
        id="schedules"
        rows={schedules ?? []}
        rowProps={(s) => ({ "data-schedule": s.id })}
        columns={[
          { label: "when", cell: (s) => `${s.cron} (${s.timezone})` },
          { label: "task", cell: (s) => `${s.task.agent} on ${s.task.machine}: ${typeof s.task.prompt === "string" ? s.task.prompt.split("\n")[0] : "…"}` },
          { label: "next", cell: (s) => (s.paused ? "paused" : when(s.nextRunAtMs)) },
          { label: "last", cell: (s) => lastRunText(s) },
          {
            label: "",
            cell: (s) =>
              canChange ? (
                <div class="row">
                  <button type="button" onClick={() => act(must(typed.PATCH("/v1/schedules/{id}", { ...byId(s.id), body: { paused: !s.paused } })))}>
                    {s.paused ? "Resume" : "Pause"}
                  </button>
                  <button type="button" onClick={() => act(must(typed.DELETE("/v1/schedules/{id}", byId(s.id))))}>
                    Delete
                  </button>
                </div>
              ) : null,
          },
        ]}
      />
      <Note id="schedules-msg" text={note} />
    </>
  );
}

export function Triggers(props: { version: number }) {
  const { canChange, data, note, act } = useTeamRecords("/v1/triggers", () => must(typed.GET("/v1/triggers")), props.version);
  const triggers = data?.triggers ?? null;
  if (triggers !== null && triggers.length === 0) return null;
  return (
    <>
      <h3>GitHub triggers</h3>
      <Table
        id="triggers"
        rows={triggers ?? []}
        rowProps={(t) => ({ "data-trigger": t.id })}
        columns={[
          { label: "on", cell: (t) => t.events.map((e) => (e.on === "issues.labeled" ? `label “${e.label}”` : `comment “${e.prefix}…”`)).join(", ") },
          { label: "task", cell: (t) => `${t.task.agent} on ${t.task.machine}` },
          { label: "deliveries to", cell: (t) => <code>{t.deliveryUrl}</code> },
          { label: "last", cell: (t) => (t.lastDelivery ? `${ago(t.lastDelivery.atMs)}: ${t.lastDelivery.outcome}` : "none yet") },
          {
            label: "",
            cell: (t) =>
              canChange ? (
                <button type="button" onClick={() => act(must(typed.DELETE("/v1/triggers/{id}", byId(t.id))))}>
                  Delete
                </button>
              ) : null,
          },
        ]}
      />
      <Note id="triggers-msg" text={note} />
    </>
  );
}
