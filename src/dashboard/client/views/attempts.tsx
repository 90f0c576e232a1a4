/**
 * Several attempts (docs/architecture.md, "Attempt groups"), in the Tasks view: start one prompt as
 * attempts of the agents installed on the connected machines, watch them, compare them a row each (check,
 * +/−, duration, cost), read one attempt's diff against the base or another's, pick one (merge or pull
 * request) and discard the rest.
 */
import { useState } from "preact/hooks";
import type { Attempt, AttemptGroup } from "@agent-runtime/protocol/attempts";
import type { Machine } from "@agent-runtime/protocol/machines";
import { byId, errorText, must, typed, typedMachine } from "../api";
import { DiffBlock } from "../diff-view";
import { ago } from "../format";
import { useCan, usePoll } from "../session-context";
import { FoldedForm, Note, Table } from "./parts";

const seconds = (ms: number | null) => (ms === null ? "—" : ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`);

function checkText(a: Attempt): string {
  if (a.verdict === "passed") return "passed";
  if (a.verdict === "failed") return a.check?.timedOut ? "failed (timed out)" : `failed (exit ${a.check?.exitCode ?? "?"})`;
  if (a.verdict === "no_check") return "no check";
  return a.error ?? "—";
}

export function AttemptGroups(props: { machines: Machine[] | null }) {
  const canRun = useCan("member");
  const [groups, setGroups] = useState<AttemptGroup[] | null>(null);
  const [note, setNote] = useState("");
  const load = async () => setGroups((await must(typed.GET("/v1/attempts", { params: { query: { limit: 20 } } }))).groups);
  usePoll(() => load().catch((err) => setNote(errorText(err))), [], 3_000);
  return (
    <section id="attempts-view">
      <h3>Several attempts</h3>
      <p class="hint">One prompt, several agents or machines, each in its own worktree and branch: compare what they changed and keep the best.</p>
      {canRun ? <NewGroup machines={props.machines ?? []} onStarted={() => load().catch((err) => setNote(errorText(err)))} /> : null}
      <Note id="attempts-msg" text={note} />
      {(groups ?? []).map((g) => (
        <Group key={g.id} group={g} canRun={canRun} onChanged={() => load().catch((err) => setNote(errorText(err)))} />
      ))}
      {groups && groups.length === 0 ? <p class="hint">no attempt groups yet</p> : null}
    </section>
  );
}

function Group(props: { group: AttemptGroup; canRun: boolean; onChanged: () => void }) {
  const g = props.group;
  const [note, setNote] = useState("");
  const [diff, setDiff] = useState<{ n: number; against: "base" | number; text: string } | null>(null);
  const act = (work: Promise<unknown>, said: string) =>
    work
      .then(() => {
        setNote(said);
        props.onChanged();
      })
      .catch((err) => setNote(errorText(err)));
  const showDiff = (n: number, against: "base" | number) =>
    must(typed.GET("/v1/attempts/{id}/diff", { params: { path: { id: g.id }, query: { n, against } } }))
      .then((d) => setDiff({ n, against, text: d.diff }))
      .catch((err) => setNote(errorText(err)));
  const done = g.attempts.filter((a) => a.state === "done" && !a.discarded);
  return (
    <div class="attempt-group" data-group={g.id} data-state={g.state}>
      <h4>
        <span class={`badge ${g.state}`}>{g.state}</span> {g.title}
      </h4>
      <p class="hint">
        from {g.base.branch ?? g.base.commit.slice(0, 12)} at {g.base.commit.slice(0, 8)} · {ago(g.createdAtMs)} by {g.createdBy}
        {g.check ? ` · check: ${g.check.command}` : ""}
        {g.picked ? ` · picked ${g.picked.n}: ${g.picked.how}${g.picked.url ? ` ${g.picked.url}` : ""}` : ""}
      </p>
      <Table
        id={`attempts-${g.id}`}
        rows={g.attempts}
        rowProps={(a) => ({ "data-n": String(a.n), "data-state": a.state, ...(a.verdict ? { "data-verdict": a.verdict } : {}) })}
        columns={[
          { label: "#", cell: (a) => String(a.n) },
          { label: "where", cell: (a) => `${a.agent} on ${a.machine}` },
          { label: "state", cell: (a) => <span class={`badge ${a.state}`}>{a.discarded ? "discarded" : a.state.replace("_", " ")}</span> },
          { label: "check", cell: (a) => checkText(a) },
          { label: "changes", cell: (a) => (a.changes ? `${a.changes.files} files, +${a.changes.added} −${a.changes.removed}` : "—") },
          { label: "time", cell: (a) => seconds(a.durationMs) },
          { label: "cost", cell: (a) => (a.costUsd === null ? "—" : `$${a.costUsd.toFixed(2)}`) },
          {
            label: "",
            cell: (a) =>
              a.discarded || a.task === null ? null : (
                <span class="actions">
                  <button type="button" data-diff={a.n} onClick={() => showDiff(a.n, "base")}>
                    Diff
                  </button>
                  {props.canRun && a.state === "done" && !g.picked ? (
                    <button
                      type="button"
                      data-pick={a.n}
                      onClick={() =>
                        act(must(typed.POST("/v1/attempts/{id}/pick", { ...byId(g.id), body: { n: a.n, action: "merge" } })), `attempt ${a.n} merged`)
                      }
                    >
                      Merge
                    </button>
                  ) : null}
                </span>
              ),
          },
        ]}
      />
      {props.canRun ? (
        <div class="actions">
          {g.state === "running" ? (
            <button type="button" data-cancel-group={g.id} onClick={() => act(must(typed.POST("/v1/attempts/{id}/cancel", byId(g.id))), "cancelled")}>
              Cancel all
            </button>
          ) : null}
          {g.state !== "running" && g.attempts.some((a) => !a.discarded && a.n !== g.picked?.n) ? (
            <button
              type="button"
              data-discard-group={g.id}
              onClick={() => act(must(typed.POST("/v1/attempts/{id}/discard", { ...byId(g.id), body: {} })), "the others' worktrees and branches removed")}
            >
              Discard {g.picked ? "the others" : "all"}
            </button>
          ) : null}
        </div>
      ) : null}
      <Note id={`group-msg-${g.id}`} text={note} />
      {diff ? (
        <div class="attempt-diff" data-diff-of={diff.n}>
          <label>
            Attempt {diff.n} against{" "}
            <select
              name="against"
              value={String(diff.against)}
              onChange={(e) => showDiff(diff.n, e.currentTarget.value === "base" ? "base" : Number(e.currentTarget.value))}
            >
              <option value="base">the base</option>
              {done
                .filter((a) => a.n !== diff.n && a.machine === g.attempts[diff.n - 1]?.machine)
                .map((a) => (
                  <option key={a.n} value={String(a.n)}>
                    attempt {a.n}
                  </option>
                ))}
            </select>
          </label>
          {diff.text ? <DiffBlock unified={diff.text} /> : <p class="hint">no difference</p>}
        </div>
      ) : null}
    </div>
  );
}

type Choice = { agent: string; machine: string };

function NewGroup(props: { machines: Machine[]; onStarted: () => void }) {
  const [choices, setChoices] = useState<Choice[] | null>(null);
  const [chosen, setChosen] = useState<string[]>([]);
  const [form, setForm] = useState({ cwd: "", prompt: "", base: "", check: "", runs: "1" });
  const [note, setNote] = useState("");
  // Each change applies to the form as it is then (the answer to Start arrives later: see tasks.tsx).
  const set = (key: keyof typeof form, value: string) => setForm((now) => ({ ...now, [key]: value }));
  /** The agents installed on each connected machine, read when the form opens. */
  const readChoices = async () => {
    const connected = props.machines.filter((m) => m.connected);
    const lists = await Promise.all(connected.map((m) => must(typedMachine(m.id).GET("/v1/agents", { params: { query: {} } })).then((l) => ({ m: m.id, l }))));
    setChoices(lists.flatMap(({ m, l }) => l.agents.filter((a) => a.installed).map((a) => ({ agent: a.id, machine: m }))));
  };
  const key = (c: Choice) => `${c.agent}@${c.machine}`;
  const start = async () => {
    const picked = (choices ?? []).filter((c) => chosen.includes(key(c)));
    const attempts = picked.flatMap((c) => Array.from({ length: Number(form.runs) }, () => ({ agent: c.agent, machine: c.machine })));
    const group = await must(
      typed.POST("/v1/attempts", {
        body: {
          prompt: form.prompt,
          cwd: form.cwd,
          attempts,
          ...(form.base ? { base: form.base } : {}),
          ...(form.check ? { check: { command: form.check } } : {}),
        },
      }),
    );
    setNote(`started ${group.id}: ${group.attempts.length} attempts from ${group.base.branch ?? group.base.commit.slice(0, 12)}`);
    // What was sent is emptied for the next one; what the person typed while it was sent stays.
    setForm((now) => (now.prompt === form.prompt ? { ...now, prompt: "" } : now));
    props.onStarted();
  };
  return (
    <FoldedForm
      id="new-group"
      summary="Start several attempts"
      act={start}
      onError={setNote}
      onOpen={() => {
        if (choices === null) readChoices().catch((err) => setNote(errorText(err)));
      }}
      after={<Note id="new-group-msg" text={note} />}
    >
      <fieldset>
        <legend>Agents × machines (2 to 8)</legend>
        {(choices ?? []).map((c) => (
          <label class="check" key={key(c)}>
            <input
              type="checkbox"
              name="attempt"
              value={key(c)}
              checked={chosen.includes(key(c))}
              onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, key(c)] : chosen.filter((k) => k !== key(c)))}
            />{" "}
            {c.agent} on {c.machine}
          </label>
        ))}
        {choices && choices.length === 0 ? <p class="hint">no agent is installed on a connected machine</p> : null}
      </fieldset>
      <label>
        Attempts of each{" "}
        <select name="runs" value={form.runs} onChange={(e) => set("runs", e.currentTarget.value)}>
          {["1", "2", "3", "4"].map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <label>
        Folder of the repository{" "}
        <input name="cwd" value={form.cwd} onInput={(e) => set("cwd", e.currentTarget.value)} placeholder="/home/me/project" required />
      </label>
      <label>
        Base branch (default: the folder's current branch) <input name="base" value={form.base} onInput={(e) => set("base", e.currentTarget.value)} />
      </label>
      <label>
        Check, run in each worktree <input name="check" value={form.check} onInput={(e) => set("check", e.currentTarget.value)} placeholder="npm test" />
      </label>
      <label>
        What to do
        <textarea name="prompt" rows={4} value={form.prompt} onInput={(e) => set("prompt", e.currentTarget.value)} required />
      </label>
      <button id="group-start" type="submit" class="primary">
        Start {chosen.length * Number(form.runs)} attempts
      </button>
    </FoldedForm>
  );
}
