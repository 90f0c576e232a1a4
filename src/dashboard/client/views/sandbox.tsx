/**
 * Sandboxes in the dashboard (docs/architecture.md, "Sandboxes: the team's rules"): the sandbox a session
 * runs in and what it blocked, on the session's view; the team's sandbox rules, on the policy's view,
 * listed in order and edited as forms (an admin only), saved with the permission rules as one document.
 */
import { useState } from "preact/hooks";
import { SANDBOX_PROFILES, WORK_ORIGINS } from "@agent-runtime/protocol/sandbox";
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import type { TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { moved } from "../policy-rules";
import {
  badgeOf,
  blockText,
  type SandboxRule,
  type SandboxRuleForm,
  sandboxDetail,
  sandboxFormOf,
  sandboxMatchText,
  sandboxRuleFromForm,
  sandboxRuleText,
  WORK_ORIGIN_WORDS,
} from "../sandbox-text";

/** The sandbox in force on a session, said plainly (`full` as such), and every block seen in its transcript. */
export function SessionSandboxPanel(props: { sandbox: SessionSandbox | null; entries: readonly TranscriptEntry[] }) {
  const badge = badgeOf(props.sandbox);
  const blocks = props.entries.filter((e) => e.kind === "sandbox");
  return (
    <div id="session-sandbox">
      <p class="row">
        <span id="session-sandbox-badge" class={`badge sandbox ${badge.profile}`}>
          {badge.text}
        </span>
        <span class="muted grow">{props.sandbox ? sandboxDetail(props.sandbox) : "recorded before sandboxes: what its agent may do is not known"}</span>
      </p>
      {blocks.length > 0 ? (
        <details id="session-blocks">
          <summary>
            {blocks.length} {blocks.length === 1 ? "thing" : "things"} blocked by the sandbox
          </summary>
          <ul>
            {blocks.map((b) => (
              <li key={b.seq}>{blockText(b)}</li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}

/** The team's sandbox rules: the first matching one decides each agent server's sandbox. */
export function SandboxRules(props: {
  rules: SandboxRule[];
  isAdmin: boolean;
  onChange: (rules: SandboxRule[]) => void;
  onEditing: (editing: boolean) => void;
}) {
  const [editing, setEditingState] = useState<number | "new" | null>(null);
  const setEditing = (next: number | "new" | null) => {
    setEditingState(next);
    props.onEditing(next !== null);
  };
  const list = props.rules;
  const done = (index: number | "new") => (next: SandboxRule | null) => {
    if (next) props.onChange(index === "new" ? [...list, next] : list.map((r, i) => (i === index ? next : r)));
    setEditing(null);
  };
  return (
    <div id="sandbox-section">
      <h3>Sandbox rules</h3>
      <p class="hint">
        What an agent and everything it starts may do on the machine. The first rule matching an agent, a machine and where the work comes from decides; with
        none matching, a person's session runs as today (full, shown as such) and a task, schedule or trigger gets workspace with only its model, the npm
        registry and github.com. A machine's owner can make any of it stricter, never looser.
      </p>
      <ol id="sandbox-rules" class="rules">
        {list.map((rule, index) =>
          editing === index ? (
            <li key={`edit-${index}`}>
              <SandboxRuleEditor rule={rule} onDone={done(index)} />
            </li>
          ) : (
            <li key={`${index}-${rule.name ?? ""}`} data-sandbox-rule={index + 1}>
              <span class={`badge sandbox ${rule.profile}`}>{rule.profile}</span> <strong>{rule.name ?? `sandbox rule ${index + 1}`}</strong>
              <div class="muted">
                {sandboxMatchText(rule)} → {sandboxRuleText(rule)}
              </div>
              {props.isAdmin ? (
                <div class="row">
                  <button
                    type="button"
                    aria-label={`Move sandbox rule ${index + 1} up`}
                    disabled={index === 0}
                    onClick={() => props.onChange(moved(list, index, -1))}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    aria-label={`Move sandbox rule ${index + 1} down`}
                    disabled={index === list.length - 1}
                    onClick={() => props.onChange(moved(list, index, 1))}
                  >
                    ↓
                  </button>
                  <button type="button" aria-label={`Edit sandbox rule ${index + 1}`} onClick={() => setEditing(index)}>
                    Edit
                  </button>
                  <button type="button" aria-label={`Remove sandbox rule ${index + 1}`} onClick={() => props.onChange(list.filter((_, i) => i !== index))}>
                    Remove
                  </button>
                </div>
              ) : null}
            </li>
          ),
        )}
        {list.length === 0 ? <li class="muted">No sandbox rules: the defaults above apply.</li> : null}
      </ol>
      {editing === "new" ? <SandboxRuleEditor rule={null} onDone={done("new")} /> : null}
      {props.isAdmin ? (
        <div class="row">
          <button id="sandbox-add" type="button" onClick={() => setEditing("new")} disabled={editing !== null}>
            Add a sandbox rule
          </button>
        </div>
      ) : null}
    </div>
  );
}

/** One sandbox rule's fields; `onDone(null)` cancels. */
function SandboxRuleEditor(props: { rule: SandboxRule | null; onDone: (rule: SandboxRule | null) => void }) {
  const [form, setForm] = useState<SandboxRuleForm>(() => sandboxFormOf(props.rule));
  const set = <K extends keyof SandboxRuleForm>(key: K, value: SandboxRuleForm[K]) => setForm({ ...form, [key]: value });
  return (
    <form
      id="sandbox-rule-editor"
      class="rule-editor"
      onSubmit={(e) => {
        e.preventDefault();
        props.onDone(sandboxRuleFromForm(form));
      }}
    >
      <label>
        Name <input name="name" value={form.name} onInput={(e) => set("name", e.currentTarget.value)} placeholder="e.g. GitHub-triggered tasks" />
      </label>
      <fieldset>
        <legend>Where the work comes from (none: any)</legend>
        {WORK_ORIGINS.map((origin) => (
          <label key={origin} class="check">
            <input
              type="checkbox"
              name="origins"
              value={origin}
              checked={form.origins.includes(origin)}
              onChange={(e) => set("origins", e.currentTarget.checked ? [...form.origins, origin] : form.origins.filter((o) => o !== origin))}
            />{" "}
            {WORK_ORIGIN_WORDS[origin]}
          </label>
        ))}
      </fieldset>
      <label>
        Agents (none: any) <input name="agents" value={form.agents} onInput={(e) => set("agents", e.currentTarget.value)} placeholder="claude, codex" />
      </label>
      <label>
        Machines (none: any) <input name="machines" value={form.machines} onInput={(e) => set("machines", e.currentTarget.value)} />
      </label>
      <label>
        Profile{" "}
        <select name="profile" value={form.profile} onChange={(e) => set("profile", e.currentTarget.value as SandboxRuleForm["profile"])}>
          {SANDBOX_PROFILES.map((p) => (
            <option key={p} value={p}>
              {p === "read-only"
                ? "read-only: writes only a private temp folder"
                : p === "workspace"
                  ? "workspace: writes its folder and temp"
                  : "full: no sandbox (the sidecar user's rights)"}
            </option>
          ))}
        </select>
      </label>
      <label>
        Network{" "}
        <select name="network" value={form.network} onChange={(e) => set("network", e.currentTarget.value as SandboxRuleForm["network"])}>
          <option value="allowlist">only the hosts listed</option>
          <option value="none">none</option>
          <option value="open">open</option>
        </select>
      </label>
      {form.network === "allowlist" ? (
        <>
          <label>
            Hosts, one per line (host, *.domain, host:port; loopback only with its port)
            <textarea name="allow" rows={3} value={form.allow} onInput={(e) => set("allow", e.currentTarget.value)} placeholder="github.com" />
          </label>
          <label class="check">
            <input type="checkbox" name="agentHosts" checked={form.agentHosts} onChange={(e) => set("agentHosts", e.currentTarget.checked)} /> and the agent's
            own model API (api.anthropic.com for claude, …)
          </label>
        </>
      ) : null}
      <label>
        Never readable, one per line (absolute or ~/…, beside ~/.ssh, ~/.aws and the other built-in secrets)
        <textarea name="denyRead" rows={2} value={form.denyRead} onInput={(e) => set("denyRead", e.currentTarget.value)} placeholder="~/private" />
      </label>
      <div class="row">
        <button type="submit">Keep this sandbox rule</button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
