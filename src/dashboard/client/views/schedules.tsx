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

export function Schedules(props: { version: number }) {
  const canChange = useCan("member");
  const listed = useResource("/v1/schedules", { read: () => must(typed.GET("/v1/schedules")), everyMs: 30_000, again: [props.version] });
  const schedules = listed.data?.schedules ?? null;
  const [note, setNote] = useState("");
  const act = (work: Promise<unknown>) =>
    work.then(
      () => listed.refetch(),
      (err) => setNote(errorText(err)),
    );
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
      <Note id="schedules-msg" text={note || listed.error} />
    </>
  );
}

export function Triggers(props: { version: number }) {
  const canChange = useCan("member");
  const listed = useResource("/v1/triggers", { read: () => must(typed.GET("/v1/triggers")), everyMs: 30_000, again: [props.version] });
  const triggers = listed.data?.triggers ?? null;
  const [note, setNote] = useState("");
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
                <button
                  type="button"
                  onClick={() =>
                    must(typed.DELETE("/v1/triggers/{id}", byId(t.id))).then(
                      () => listed.refetch(),
                      (err) => setNote(errorText(err)),
                    )
                  }
                >
                  Delete
                </button>
              ) : null,
          },
        ]}
      />
      <Note id="triggers-msg" text={note || listed.error} />
    </>
  );
}
