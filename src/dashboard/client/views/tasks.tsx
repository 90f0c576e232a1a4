/**
 * Tasks (docs/architecture.md, "Tasks"): work handed to an agent to do alone. A member starts one (it
 * waits, queued, for a machine that is away); everyone sees the list with each task's state and result;
 * a task opens as its session (transcript, changes), and one not ended can be cancelled.
 */
import { useState } from "preact/hooks";
import type { Machine } from "@agent-runtime/protocol/machines";
import type { Task } from "@agent-runtime/protocol/tasks";
import { summaryText } from "@agent-runtime/protocol/review-text";
import { byId, errorText, must, typed } from "../api";
import { ago, when } from "../format";
import { href } from "../router";
import { useCan, usePoll } from "../session-context";
import { Link, Note, Table } from "./parts";
import { Schedules, Triggers } from "./schedules";
import { AttemptGroups } from "./attempts";

/** A task's result in a line: its last words, what it changed, its branch, or why it failed. */
export function resultText(task: Task): string {
  const r = task.result;
  if (!r) return task.state === "queued" ? "waits for its machine (or a free slot)" : task.state === "waiting" ? "a person is asked" : "working…";
  const parts = [r.error ?? r.lastMessage, r.changes && r.changes.files > 0 ? summaryText(r.changes) : null, r.branch ? `on ${r.branch}` : null];
  return parts.filter(Boolean).join(" · ") || "—";
}

export function TasksView(props: { machines: Machine[] | null }) {
  const canRun = useCan("member");
  const [tasks, setTasks] = useState<Task[] | null>(null);
  const [note, setNote] = useState("");
  /** Bumped when a task or a schedule is started here: the lists below read again. */
  const [version, setVersion] = useState(0);
  const load = async () => setTasks((await must(typed.GET("/v1/tasks", { params: { query: { limit: 100 } } }))).tasks);
  usePoll(() => load().catch((err) => setNote(errorText(err))), [], 5_000);
  const cancel = (task: Task) =>
    must(typed.POST("/v1/tasks/{id}/cancel", byId(task.id)))
      .then(() => load())
      .catch((err) => setNote(errorText(err)));
  return (
    <section id="tasks-view">
      <h2>Tasks</h2>
      <p class="hint">An agent works on a task alone, under the team's permission policy: it starts when its machine is there, and waits for it when not.</p>
      {canRun ? (
        <NewTask
          machines={props.machines ?? []}
          onStarted={() => {
            setVersion(version + 1);
            load().catch((err) => setNote(errorText(err)));
          }}
        />
      ) : null}
      <Note id="tasks-msg" text={note} />
      <AttemptGroups machines={props.machines} />
      <Schedules version={version} />
      <Triggers version={version} />
      <h3>All tasks</h3>
      <Table
        id="tasks"
        rows={tasks ?? []}
        empty={tasks ? "no tasks yet" : undefined}
        rowProps={(t) => ({ "data-task": t.id, "data-state": t.state })}
        columns={[
          { label: "state", cell: (t) => <span class={`badge ${t.state}`}>{t.state.replace("_", " ")}</span> },
          { label: "task", cell: (t) => (t.session ? <Link href={href({ view: "session", id: t.session })}>{t.title}</Link> : t.title) },
          { label: "where", cell: (t) => `${t.agent} on ${t.machine}` },
          { label: "result", cell: (t) => resultText(t) },
          { label: "started", cell: (t) => `${ago(t.createdAtMs)} by ${t.createdBy}` },
          {
            label: "",
            cell: (t) =>
              canRun && !t.result ? (
                <button type="button" data-cancel={t.id} onClick={() => cancel(t)}>
                  Cancel
                </button>
              ) : null,
          },
        ]}
      />
    </section>
  );
}

function NewTask(props: { machines: Machine[]; onStarted: () => void }) {
  const [form, setForm] = useState({
    machine: "",
    agent: "claude",
    cwd: "",
    prompt: "",
    worktree: false,
    deadline: "60",
    repeat: false,
    cron: "0 7 * * 1-5",
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC",
  });
  const [note, setNote] = useState("");
  const set = (key: keyof typeof form, value: string | boolean) => setForm({ ...form, [key]: value });
  const machine = form.machine || props.machines[0]?.id || "";
  const start = async () => {
    const task = {
      machine,
      agent: form.agent,
      cwd: form.cwd,
      prompt: form.prompt,
      deadlineSeconds: Math.round(Number(form.deadline) * 60),
      ...(form.worktree ? { worktree: {} } : {}),
    };
    if (form.repeat) {
      const schedule = await must(typed.POST("/v1/schedules", { body: { cron: form.cron, timezone: form.timezone, task } }));
      setNote(`scheduled: next run ${when(schedule.nextRunAtMs)}`);
    } else {
      const started = await must(typed.POST("/v1/tasks", { body: task }));
      setNote(started.state === "queued" ? `queued until ${started.machine} is back (or a slot frees)` : "started");
    }
    setForm({ ...form, prompt: "" });
    props.onStarted();
  };
  return (
    <details id="new-task">
      <summary>Start a task</summary>
      <form
        class="rule-editor"
        onSubmit={(e) => {
          e.preventDefault();
          start().catch((err) => setNote(errorText(err)));
        }}
      >
        <label>
          Machine{" "}
          <select name="machine" value={machine} onChange={(e) => set("machine", e.currentTarget.value)}>
            {props.machines.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
                {m.connected ? "" : " (away)"}
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent <input name="agent" value={form.agent} onInput={(e) => set("agent", e.currentTarget.value)} />
        </label>
        <label>
          Folder on the machine <input name="cwd" value={form.cwd} onInput={(e) => set("cwd", e.currentTarget.value)} placeholder="/home/me/project" required />
        </label>
        <label>
          What to do
          <textarea name="prompt" rows={4} value={form.prompt} onInput={(e) => set("prompt", e.currentTarget.value)} required />
        </label>
        <label class="check">
          <input type="checkbox" name="worktree" checked={form.worktree} onChange={(e) => set("worktree", e.currentTarget.checked)} /> in a new worktree (its
          own branch)
        </label>
        <label>
          Deadline (minutes) <input name="deadline" inputMode="numeric" value={form.deadline} onInput={(e) => set("deadline", e.currentTarget.value)} />
        </label>
        <label class="check">
          <input type="checkbox" name="repeat" checked={form.repeat} onChange={(e) => set("repeat", e.currentTarget.checked)} /> repeat it on a schedule
        </label>
        {form.repeat ? (
          <>
            <label>
              When (cron: minute hour day month weekday) <input name="cron" value={form.cron} onInput={(e) => set("cron", e.currentTarget.value)} />
            </label>
            <label>
              Time zone <input name="timezone" value={form.timezone} onInput={(e) => set("timezone", e.currentTarget.value)} />
            </label>
          </>
        ) : null}
        <button id="task-start" type="submit" class="primary">
          {form.repeat ? "Schedule" : "Start"}
        </button>
      </form>
      <Note id="new-task-msg" text={note} />
    </details>
  );
}
