/**
 * An ordered list of rules the first match of which decides (the permission policy's, the sandbox's): each
 * rule in words, and for an admin Move up/down, Edit and Remove; Add opens the rule's form below. The
 * views give what differs (how a rule reads, its form); both save the list with the policy's one document.
 */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { moved } from "../policy-rules";

export function RuleList<R extends { name?: string | undefined }>(props: {
  /** The list's id; its items carry `data-<item>` with their position from 1. */
  id: string;
  item: string;
  /** What a rule is called in labels ("rule", "sandbox rule"). */
  noun: string;
  rules: readonly R[];
  isAdmin: boolean;
  /** Said when there is no rule (nothing while the rules are not read yet). */
  empty: string | null;
  add: { id: string; label: string };
  /** The rule's mark (its decision, its profile) before its name, and its line of words under it. */
  badge: (rule: R) => ComponentChildren;
  detail: (rule: R) => ComponentChildren;
  /** The rule's form (null: a new one); `done(null)` cancels. */
  editor: (rule: R | null, done: (rule: R | null) => void) => ComponentChildren;
  onChange: (rules: R[]) => void;
  /** A form is open (the page holds its save meanwhile). */
  onEditing?: (editing: boolean) => void;
}) {
  const [editing, setEditingState] = useState<number | "new" | null>(null);
  const setEditing = (next: number | "new" | null) => {
    setEditingState(next);
    props.onEditing?.(next !== null);
  };
  const list = [...props.rules];
  const done = (index: number | "new") => (next: R | null) => {
    if (next) props.onChange(index === "new" ? [...list, next] : list.map((r, i) => (i === index ? next : r)));
    setEditing(null);
  };
  const { noun } = props;
  return (
    <>
      <ol id={props.id} class="rules">
        {list.map((rule, index) =>
          editing === index ? (
            <li key={`edit-${index}`}>{props.editor(rule, done(index))}</li>
          ) : (
            <li key={`${index}-${rule.name ?? ""}`} {...{ [`data-${props.item}`]: index + 1 }}>
              {props.badge(rule)} <strong>{rule.name ?? `${noun} ${index + 1}`}</strong>
              <div class="muted">{props.detail(rule)}</div>
              {props.isAdmin ? (
                <div class="row">
                  <button
                    type="button"
                    aria-label={`Move ${noun} ${index + 1} up`}
                    disabled={index === 0}
                    onClick={() => props.onChange(moved(list, index, -1))}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    aria-label={`Move ${noun} ${index + 1} down`}
                    disabled={index === list.length - 1}
                    onClick={() => props.onChange(moved(list, index, 1))}
                  >
                    ↓
                  </button>
                  <button type="button" aria-label={`Edit ${noun} ${index + 1}`} onClick={() => setEditing(index)}>
                    Edit
                  </button>
                  <button type="button" aria-label={`Remove ${noun} ${index + 1}`} onClick={() => props.onChange(list.filter((_, i) => i !== index))}>
                    Remove
                  </button>
                </div>
              ) : null}
            </li>
          ),
        )}
        {list.length === 0 && props.empty !== null ? <li class="muted">{props.empty}</li> : null}
      </ol>
      {editing === "new" ? props.editor(null, done("new")) : null}
      {props.isAdmin ? (
        <div class="row">
          <button id={props.add.id} type="button" onClick={() => setEditing("new")} disabled={editing !== null}>
            {props.add.label}
          </button>
        </div>
      ) : null}
    </>
  );
}

/** A form's fields, each set by name (a rule's form starts from the rule, or empty). */
export function useFields<F extends object>(initial: () => F): [F, <K extends keyof F>(key: K, value: F[K]) => void] {
  const [form, setForm] = useState<F>(initial);
  return [form, (key, value) => setForm((f) => ({ ...f, [key]: value }))];
}

/** A rule's form: its fields, then Keep and Cancel. */
export function RuleEditorForm(props: { id: string; keep: string; onKeep: () => void; onCancel: () => void; children: ComponentChildren }) {
  return (
    <form
      id={props.id}
      class="rule-editor"
      onSubmit={(e) => {
        e.preventDefault();
        props.onKeep();
      }}
    >
      {props.children}
      <div class="row">
        <button type="submit">{props.keep}</button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** A rule's choice among a few values, each in its words; what is picked is one of them (no cast). */
export function Choice<V extends string>(props: {
  label: string;
  name: string;
  value: V;
  values: readonly V[];
  words?: Readonly<Record<V, string>>;
  onChange: (value: V) => void;
}) {
  return (
    <label>
      {props.label}{" "}
      <select
        name={props.name}
        value={props.value}
        onChange={(e) => {
          const picked = props.values.find((value) => value === e.currentTarget.value);
          if (picked !== undefined) props.onChange(picked);
        }}
      >
        {props.values.map((value) => (
          <option key={value} value={value}>
            {props.words ? props.words[value] : value}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A rule's set of values (none ticked: any), one checkbox each; what is ticked comes back in their order. */
export function Checks<V extends string>(props: {
  legend: string;
  name: string;
  values: readonly V[];
  checked: readonly string[];
  words?: Readonly<Record<V, string>>;
  onChange: (checked: V[]) => void;
}) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {props.values.map((value) => (
        <label key={value} class="check">
          <input
            type="checkbox"
            name={props.name}
            value={value}
            checked={props.checked.includes(value)}
            onChange={(e) => {
              const ticked = e.currentTarget.checked;
              props.onChange(props.values.filter((v) => (v === value ? ticked : props.checked.includes(v))));
            }}
          />{" "}
          {props.words ? props.words[value] : value}
        </label>
      ))}
    </fieldset>
  );
}

/** Which agents and machines a rule is for (none listed: any), as names separated by commas or spaces. */
export function AppliesTo(props: { form: { agents: string; machines: string }; set: (key: "agents" | "machines", value: string) => void }) {
  return (
    <>
      <label>
        Agents (none: any){" "}
        <input name="agents" value={props.form.agents} onInput={(e) => props.set("agents", e.currentTarget.value)} placeholder="claude, codex" />
      </label>
      <label>
        Machines (none: any) <input name="machines" value={props.form.machines} onInput={(e) => props.set("machines", e.currentTarget.value)} />
      </label>
    </>
  );
}
