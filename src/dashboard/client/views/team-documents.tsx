/**
 * One of the team's documents (skills, MCP servers, agents) as a list of entries with Add, Edit and Remove,
 * each entry's fields labelled and its mistakes said beside them (team-forms.ts), saved for every machine
 * through the same API as before (`PUT /v1/config/{kind}` with the ETag read, so a save over someone
 * else's newer one is refused and said). The JSON stays one tap away for what the forms do not show.
 * Everyone reads; only an admin edits.
 */
import { useRef, useState } from "preact/hooks";
import type { AgentsMachineStatus } from "@agent-runtime/protocol/agents-config";
import { FieldIssues } from "@agent-runtime/protocol/problems";
import type { SkillsMachineStatus } from "@agent-runtime/protocol/skills";
import { api, errorText, must, refusal, refused, typed } from "../api";
import { type DocumentKind, type Entry, type FieldErrors, type Form, KINDS, type KindSpec, withEntry } from "../team-forms";
import { useResource } from "../use-resource";
import { useCan } from "../session-context";
import { Note, Table } from "./parts";

type Status = Pick<SkillsMachineStatus, "machine" | "version" | "appliedAtMs" | "error"> & {
  skills?: string[];
  servers?: string[];
  agents?: AgentsMachineStatus["agents"];
  errors: ({ source: string; error: string } | { agent: string; error: string })[];
};

const COLUMN: Record<DocumentKind, { label: string; list: (m: Status) => string[] }> = {
  skills: { label: "skills", list: (m) => m.skills ?? [] },
  mcp: { label: "servers", list: (m) => m.servers ?? [] },
  agents: { label: "installed", list: (m) => Object.entries(m.agents ?? {}).map(([agent, a]) => `${agent} ${a.installedVersion ?? "—"}`) },
};

/** What the API holds: the document and the ETag a save must match. */
async function readDocument(kind: DocumentKind): Promise<{ document: unknown; etag: string | null }> {
  const res = await api(`/v1/config/${kind}`);
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) throw refused(res.status, body);
  return { document: body, etag: res.headers.get("etag") };
}

export function TeamDocument(props: { kind: DocumentKind }) {
  const { kind } = props;
  const spec = KINDS[kind];
  const isAdmin = useCan("admin");
  // An edit not saved yet: the list as changed here, and the JSON as typed when it is the one being edited.
  const [draft, setDraft] = useState<Entry[] | null>(null);
  const [json, setJson] = useState<{ text: string; error: string } | null>(null);
  const [editing, setEditing] = useState<number | "new" | null>(null);
  const [note, setNote] = useState({ text: "", error: false });
  const [refusedFields, setRefusedFields] = useState<Record<string, string>>({});
  // The version an edit kept through a save builds on: that save's own, never one read back after it
  // (another admin's, saved in between, would then be replaced without a 412).
  const [keptOn, setKeptOn] = useState<string | null>(null);
  const shown = useRef({ draft, json });
  shown.current = { draft, json };
  const stored = useResource(`/v1/config/${kind}`, { read: () => readDocument(kind), everyMs: 60_000, hold: draft !== null || editing !== null });
  const status = useResource(`/v1/config/${kind}/status`, { read: () => must(typed.GET(`/v1/config/${kind}/status`)), everyMs: 60_000 });
  const saved = stored.data ? spec.entries(stored.data.document) : [];
  const list = draft ?? saved;
  const keyed = kind !== "skills";

  const change = (next: Entry[]) => {
    setDraft(next);
    setJson(null);
  };
  const discard = async () => {
    setDraft(null);
    setJson(null);
    setKeptOn(null);
    setEditing(null);
    setRefusedFields({});
    await stored.refetch();
  };
  const save = async () => {
    // What this save sends: an edit made while it is on its way is not it, and stays to be saved next.
    const sent = { draft, json };
    const ifMatch = keptOn ?? stored.data?.etag;
    const res = await api(`/v1/config/${kind}`, {
      method: "PUT",
      headers: ifMatch ? { "if-match": ifMatch } : {},
      // The JSON as typed, when it is what was edited: the worker says what is wrong with it, not the form.
      body: json && !json.error ? json.text : JSON.stringify(spec.document(list)),
    });
    if (res.status === 412) return setNote({ text: "Someone saved a newer version meanwhile: Discard changes to see it, then edit again.", error: true });
    if (!res.ok) {
      const refusedWith = await refusal(res);
      // The worker's word on each entry is shown on that entry.
      const issues = FieldIssues.safeParse(refusedWith.problem?.errors);
      const byEntry: Record<string, string> = {};
      for (const e of issues.success ? issues.data : []) {
        const at = spec.fieldOf(e.field);
        if (at) byEntry[at.key] ??= `${at.field}: ${e.message}`;
      }
      setRefusedFields(byEntry);
      return setNote({ text: refusedWith.message, error: true });
    }
    setNote({ text: `Saved (version ${(res.headers.get("etag") ?? "").replace(/"/g, "")}): machines apply it now.`, error: false });
    setRefusedFields({});
    // Until the read-back answers, the list shown stays what was saved (not the version read before it), and
    // an edit made meanwhile builds on this save's version.
    setKeptOn(res.headers.get("etag"));
    await Promise.all([stored.refetch(), status.refetch()]);
    const kept = shown.current.draft !== sent.draft || shown.current.json !== sent.json;
    if (!kept) setKeptOn(null);
    setDraft((now) => (now === sent.draft ? null : now));
    setJson((now) => (now === sent.json ? null : now));
  };

  return (
    <section id={`${kind}-section`}>
      <h2 id={`${kind}-title`}>{spec.title}</h2>
      <p class="hint">{spec.hint}</p>
      {stored.error ? (
        <Note id={`${kind}-load`} text={stored.outage ? `Cannot reach the service (${stored.error}): this is the list as last read.` : stored.error} error />
      ) : null}
      <ul id={`${kind}-entries`} class="entries">
        {list.map((entry, index) =>
          editing === index ? (
            <li key={`edit-${entry.key}`}>
              <EntryEditor
                spec={spec}
                entry={entry}
                others={list.filter((_, i) => i !== index).map((e) => e.key)}
                onDone={(next) => {
                  if (next) change(withEntry(list, next, index, keyed));
                  setEditing(null);
                }}
              />
            </li>
          ) : (
            <li key={entry.key} data-entry={entry.key}>
              <span class="grow">{spec.summary(entry)}</span>
              {refusedFields[entry.key] ? <span class="error">{refusedFields[entry.key]}</span> : null}
              {isAdmin ? (
                <div class="row">
                  <button type="button" disabled={editing !== null} onClick={() => setEditing(index)}>
                    Edit
                  </button>
                  <button
                    type="button"
                    disabled={editing !== null}
                    onClick={() => change(list.filter((_, i) => i !== index).map((e, i) => (keyed ? e : { ...e, key: String(i) })))}
                  >
                    Remove
                  </button>
                </div>
              ) : null}
            </li>
          ),
        )}
        {stored.data && list.length === 0 ? <li class="muted">None yet.</li> : null}
      </ul>
      {editing === "new" ? (
        <EntryEditor
          spec={spec}
          entry={null}
          others={list.map((e) => e.key)}
          onDone={(next) => {
            if (next) change(withEntry(list, next, null, keyed));
            setEditing(null);
          }}
        />
      ) : null}
      {isAdmin ? (
        <div class="row">
          <button id={`${kind}-add`} type="button" disabled={editing !== null || !stored.data} onClick={() => setEditing("new")}>
            Add {spec.article} {spec.noun}
          </button>
          <button
            id={`${kind}-save`}
            class="primary"
            type="button"
            disabled={draft === null || editing !== null || Boolean(json?.error)}
            onClick={() => save().catch((err) => setNote({ text: errorText(err), error: true }))}
          >
            Save for the whole team
          </button>
          {draft !== null ? (
            <button type="button" onClick={() => void discard()}>
              Discard changes
            </button>
          ) : null}
        </div>
      ) : null}
      <Note id={`${kind}-msg`} text={note.text} error={note.error} />
      <details id={`${kind}-json`}>
        <summary>{isAdmin ? "Edit as JSON" : "As JSON"}</summary>
        <textarea
          id={kind}
          aria-label={`${spec.title} as JSON`}
          aria-describedby={`${kind}-json-error`}
          rows={8}
          spellcheck={false}
          readOnly={!isAdmin}
          value={json?.text ?? JSON.stringify(spec.document(list), null, 2)}
          onInput={(e) => {
            const text = e.currentTarget.value;
            try {
              setDraft(spec.entries(JSON.parse(text)));
              setJson({ text, error: "" });
            } catch (err) {
              setJson({ text, error: `not valid JSON: ${errorText(err)}` });
            }
          }}
        />
        <p id={`${kind}-json-error`} class="error">
          {json?.error ?? ""}
        </p>
      </details>
      <Table
        id={`${kind}-status`}
        rows={status.data?.machines ?? []}
        columns={[
          { label: "machine", cell: (m: Status) => m.machine },
          { label: "applied", cell: (m) => (m.version === status.data?.version ? `${m.version} (current)` : String(m.version)) },
          { label: "when", cell: (m) => (m.appliedAtMs ? new Date(m.appliedAtMs).toLocaleTimeString() : "—") },
          { label: COLUMN[kind].label, cell: (m) => COLUMN[kind].list(m).join(", ") || "—" },
          {
            label: "errors",
            class: "error",
            cell: (m) => [m.error, ...m.errors.map((x) => `${"source" in x ? x.source : x.agent}: ${x.error}`)].filter(Boolean).join("; "),
          },
        ]}
      />
    </section>
  );
}

/** One entry's fields, each with its mistake beside it; `onDone(null)` cancels. */
function EntryEditor(props: { spec: KindSpec; entry: Entry | null; others: string[]; onDone: (entry: Entry | null) => void }) {
  const { spec } = props;
  const [form, setForm] = useState<Form>(() => spec.formOf(props.entry));
  const [errors, setErrors] = useState<FieldErrors>({});
  const set = (name: string, value: string) => setForm({ ...form, [name]: value });
  const id = (name: string) => `entry-${name}`;
  return (
    <form
      id="entry-editor"
      class="rule-editor"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        const made = spec.entryOf(form, props.entry, props.others);
        if ("errors" in made) return setErrors(made.errors);
        props.onDone(made.entry);
      }}
    >
      {spec.fields
        .filter((f) => f.shown?.(form) ?? true)
        .map((f) => {
          const error = errors[f.name];
          const common = {
            id: id(f.name),
            name: f.name,
            value: form[f.name] ?? "",
            "aria-invalid": error ? ("true" as const) : undefined,
            "aria-describedby": error ? `${id(f.name)}-error` : undefined,
          };
          return (
            <label key={f.name} data-field={f.name} htmlFor={id(f.name)}>
              {f.label}
              {f.input === "select" ? (
                <select {...common} onChange={(e) => set(f.name, e.currentTarget.value)}>
                  {(f.options ?? []).map(([value, words]) => (
                    <option key={value} value={value}>
                      {words}
                    </option>
                  ))}
                </select>
              ) : f.input === "lines" ? (
                <textarea {...common} rows={3} spellcheck={false} placeholder={f.placeholder} onInput={(e) => set(f.name, e.currentTarget.value)} />
              ) : (
                <input {...common} autocapitalize="off" placeholder={f.placeholder} onInput={(e) => set(f.name, e.currentTarget.value)} />
              )}
              {error ? (
                <span id={`${id(f.name)}-error`} class="error field-error">
                  {error}
                </span>
              ) : null}
            </label>
          );
        })}
      {/* A mistake in a field the form does not show (kept from the JSON) is said too. */}
      {Object.entries(errors)
        .filter(([name]) => !spec.fields.some((f) => f.name === name && (f.shown?.(form) ?? true)))
        .map(([name, message]) => (
          <p key={name} class="error">
            {name}: {message}
          </p>
        ))}
      <div class="row">
        <button type="submit" class="primary">
          Keep this {spec.noun}
        </button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
