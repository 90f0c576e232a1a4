/** Small pieces every view uses. */
import type { AnchorHTMLAttributes, ComponentChildren } from "preact";
import { errorText } from "../api";
import { follow } from "../router";

/** A link inside the dashboard: followed without reloading the page. */
export function Link(props: { href: string; class?: string; children: ComponentChildren } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const { href, children, ...rest } = props;
  return (
    <a href={href} {...rest} onClick={follow}>
      {children}
    </a>
  );
}

/** A row of tabs, each at its own address; the one shown is marked for the eye and for a screen reader. */
export function Tabs<T extends string>(props: { label: string; tabs: readonly T[]; current: T; href: (tab: T) => string; names: Record<T, string> }) {
  return (
    <nav class="tabs" aria-label={props.label}>
      {props.tabs.map((t) => (
        <Link key={t} href={props.href(t)} class={t === props.current ? "selected" : ""} data-tab={t} aria-current={t === props.current ? "page" : undefined}>
          {props.names[t]}
        </Link>
      ))}
    </nav>
  );
}

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

/**
 * A table on a wide screen; on a phone each row becomes a card whose cells carry their column's label
 * (style.css), so nothing scrolls sideways.
 */
export function Table<T>(props: { id?: string; rows: readonly T[]; columns: Column<T>[]; rowProps?: (row: T) => Record<string, string>; empty?: string }) {
  return (
    <table class="cards">
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th key={c.label}>{c.label}</th>
          ))}
        </tr>
      </thead>
      <tbody id={props.id}>
        {props.rows.map((row, i) => (
          <tr key={i} {...(props.rowProps?.(row) ?? {})}>
            {props.columns.map((c) => (
              <td key={c.label} data-label={c.label} class={c.class}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
        {props.rows.length === 0 && props.empty ? (
          <tr>
            <td class="muted">{props.empty}</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}

export function Dot(props: { on: boolean }) {
  return <span class={props.on ? "dot on" : "dot"} />;
}

/** A line under a form saying what happened (or what went wrong). */
export function Note(props: { id: string; text: string; error?: boolean }) {
  return (
    <p id={props.id} class={props.error ? "error" : "muted"} aria-live="polite">
      {props.text}
    </p>
  );
}

/** Copies a shown secret or command; says so, or asks the person to select it when the clipboard is refused. */
export function CopyButton(props: { id: string; text: string }) {
  return (
    <button
      id={props.id}
      type="button"
      onClick={(e) => {
        const button = e.currentTarget;
        navigator.clipboard.writeText(props.text).then(
          () => {
            button.textContent = "Copied";
          },
          () => {
            button.textContent = "Select and copy";
          },
        );
      }}
    >
      Copy
    </button>
  );
}

/** A one-line text box for a command, a folder or a path: no spell check, as wide as its row allows. */
export function WideInput(props: { id: string; placeholder: string; value: string; onValue: (value: string) => void; required?: boolean }) {
  return (
    <input
      id={props.id}
      class="grow"
      placeholder={props.placeholder}
      required={props.required}
      spellcheck={false}
      value={props.value}
      onInput={(e) => props.onValue(e.currentTarget.value)}
    />
  );
}

/** A checkbox with its words after it, in a form's row. */
export function CheckBox(props: { id: string; checked: boolean; onValue: (on: boolean) => void; children: ComponentChildren }) {
  return (
    <label class="row muted check">
      <input id={props.id} type="checkbox" checked={props.checked} onChange={(e) => props.onValue(e.currentTarget.checked)} /> {props.children}
    </label>
  );
}

/** A form folded under its summary: submitting runs `act`; what it throws is shown through `onError`, in words. */
export function FoldedForm(props: {
  id: string;
  summary: string;
  act: () => Promise<void>;
  onError: (text: string) => void;
  onOpen?: () => void;
  /** What shows under the form, e.g. the outcome's note. */
  after?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <details
      id={props.id}
      onToggle={(e) => {
        if (e.currentTarget.open) props.onOpen?.();
      }}
    >
      <summary>{props.summary}</summary>
      <form
        class="rule-editor"
        onSubmit={(e) => {
          e.preventDefault();
          props.act().catch((err) => props.onError(errorText(err)));
        }}
      >
        {props.children}
      </form>
      {props.after}
    </details>
  );
}
