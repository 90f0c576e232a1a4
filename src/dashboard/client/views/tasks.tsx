/**
 * Tasks (docs/architecture.md, "Tasks"): work handed to an agent to do alone. A member starts one (it
 * waits, queued, for a machine that is away); everyone sees the list with each task's state and result;
 * a task opens as its session (transcript, changes), and one not ended can be cancelled.
 */
import { useEffect, useState } from "preact/hooks";
import type { Machine } from "@agent-runtime/protocol/machines";
import type { Task } from "@agent-runtime/protocol/tasks";
import type { AgentInfo } from "@agent-runtime/protocol/agents";
import type { Session } from "@agent-runtime/protocol/sessions";
import { summaryText } from "@agent-runtime/protocol/review-text";
import { byId, errorText, must, typed, typedMachine } from "../api";
import { ago, when, whoText } from "../format";
import { href } from "../router";
import { useCan, usePoll } from "../session-context";
import { FoldedForm, Link, Note, Table } from "./parts";
import { Schedules, Triggers } from "./schedules";
import { AttemptGroups } from "./attempts";

/** A task's result in a line: its last words, what it changed, its branch, or why it failed. */
export function resultText(task: Task): string {
  const r = task.result;
  if (!r) return task.state === "queued" ? "waits for its machine (or a free slot)" : task.state === "waiting" ? "a person is asked" : "working…";
  const parts = [r.error ?? r.lastMessage, r.changes && r.changes.files > 0 ? summaryText(r.changes) : null, r.branch ? `on ${r.branch}` : null];
  return parts.filter(Boolean).join(" · ") || "—";
}

export function TasksView(props: { machines: Machine[] | null; sessions: Session[] }) {
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
          sessions={props.sessions}
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
          { label: "started", cell: (t) => `${ago(t.createdAtMs)} by ${whoText(t.createdBy)}` },
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

/** The agents of a machine, as it answers them (null while asked, or when it is away). */
function useAgentsOf(machine: string, connected: boolean): { agents: AgentInfo[] | null; reload: () => void } {
  const [agents, setAgents] = useState<AgentInfo[] | null>(null);
  const [asked, setAsked] = useState(0);
  useEffect(() => {
    setAgents(null);
    if (!machine || !connected) return;
    let current = true;
    must(typedMachine(machine).GET("/v1/agents", {}))
      .then((list) => current && setAgents(list.agents))
      .catch(() => current && setAgents(null));
    return () => {
      current = false;
    };
  }, [machine, connected, asked]);
  return { agents, reload: () => setAsked((n) => n + 1) };
}

/**
 * A task starts from what the machine has: its agent is one installed there (the others can be installed
 * from here), its folder one of its recent sessions' or typed; what cannot start is said before Start.
 */
function NewTask(props: { machines: Machine[]; sessions: Session[]; onStarted: () => void }) {
  const [form, setForm] = useState({
    machine: "",
    agent: "",
    cwd: "",
    prompt: "",
    worktree: false,
    deadline: "60",
    repeat: false,
    cron: "0 7 * * 1-5",
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC",
  });
  const [note, setNote] = useState("");
  // Each change applies to the form as it is then, not as this render saw it: an answer arriving later
  // (an install, a start) must not put back what was replaced meanwhile.
  const set = (key: keyof typeof form, value: string | boolean) => setForm((now) => ({ ...now, [key]: value }));
  const machine = form.machine || props.machines.find((m) => m.connected)?.id || props.machines[0]?.id || "";
  const connected = props.machines.find((m) => m.id === machine)?.connected ?? false;
  const { agents, reload } = useAgentsOf(machine, connected);
  // Away, the machine cannot say: the agents its sessions ran are what it had when last seen.
  const lastSeen = [...new Set(props.sessions.filter((s) => s.machine === machine).map((s) => s.agent))].map((id) => ({ id, name: id }));
  const installed: { id: string; name?: string | undefined }[] = connected ? (agents?.filter((a) => a.installed) ?? []) : lastSeen;
  const others = agents?.filter((a) => !a.installed && a.registry?.installable !== false) ?? [];
  const agent = installed.some((a) => a.id === form.agent) ? form.agent : (installed[0]?.id ?? "");
  const [toInstall, setToInstall] = useState("");
  const folders = [...new Set(props.sessions.filter((s) => s.machine === machine && s.cwd !== ".").map((s) => s.cwd))].slice(0, 20);
  // Said before Start: a machine that is away, or one with no agent to run it.
  const blocker = !machine
    ? "No machine has connected yet."
    : !connected
      ? installed.length > 0
        ? `${machine} is away: the task waits until it is back (its agents as last seen in its sessions).`
        : `${machine} is away, and no agent of it is known here: start the task when it is back.`
      : agents && installed.length === 0
        ? `No agent is installed on ${machine}: install one below first.`
        : null;
  const install = async () => {
    const id = toInstall || others[0]?.id;
    if (!id) return;
    setNote(`installing ${id} on ${machine}…`);
    try {
      await must(typedMachine(machine).POST("/v1/agents/{agent}/install", { params: { path: { agent: id } }, body: {} }));
      setNote(`${id} installed on ${machine}`);
      set("agent", id);
      reload();
    } catch (err) {
      setNote(`${id}: ${errorText(err)}`);
    }
  };
  const start = async () => {
    const task = {
      machine,
      agent,
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
    // What was sent is emptied for the next one; what the person typed while it was sent stays.
    setForm((now) => (now.prompt === form.prompt ? { ...now, prompt: "" } : now));
    props.onStarted();
  };
  return (
    <FoldedForm id="new-task" summary="Start a task" act={start} onError={setNote} after={<Note id="new-task-msg" text={note} />}>
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
        Agent (installed on {machine || "the machine"})
        <select name="agent" value={agent} disabled={installed.length === 0} onChange={(e) => set("agent", e.currentTarget.value)}>
          {installed.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name ?? a.id}
            </option>
          ))}
          {installed.length === 0 ? <option value="">{!connected ? "the machine is away" : agents ? "none installed" : "asking the machine…"}</option> : null}
        </select>
      </label>
      {others.length > 0 ? (
        <div class="row" id="task-install">
          <span class="muted">Not on {machine}:</span>
          <select aria-label={`an agent to install on ${machine}`} value={toInstall || others[0]?.id} onChange={(e) => setToInstall(e.currentTarget.value)}>
            {others.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name ?? a.id}
              </option>
            ))}
          </select>
          <button type="button" onClick={() => void install()}>
            Install
          </button>
        </div>
      ) : null}
      <label>
        Folder on the machine
        <input
          name="cwd"
          list="task-folders"
          value={form.cwd}
          onInput={(e) => set("cwd", e.currentTarget.value)}
          placeholder={folders[0] ?? "/home/me/project"}
          required
        />
        <datalist id="task-folders">
          {folders.map((f) => (
            <option key={f} value={f} />
          ))}
        </datalist>
      </label>
      {folders.length > 0 ? (
        <fieldset class="chips" id="task-recent-folders">
          <legend class="muted">Recent folders on {machine}</legend>
          {folders.slice(0, 4).map((f) => (
            <button key={f} type="button" onClick={() => set("cwd", f)}>
              {f.split("/").slice(-2).join("/")}
            </button>
          ))}
        </fieldset>
      ) : null}
      <label>
        What to do
        <textarea name="prompt" rows={4} value={form.prompt} onInput={(e) => set("prompt", e.currentTarget.value)} required />
      </label>
      <label class="check">
        <input type="checkbox" name="worktree" checked={form.worktree} onChange={(e) => set("worktree", e.currentTarget.checked)} /> in a new worktree (its own
        branch)
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
      {blocker ? (
        <p id="task-blocker" class="notice">
          {blocker}
        </p>
      ) : null}
      <button id="task-start" type="submit" class="primary" disabled={!agent}>
        {form.repeat ? "Schedule" : "Start"}
      </button>
    </FoldedForm>
  );
}
