/**
 * The team's sandbox rules in the dashboard (docs/architecture.md, "Sandboxes: the team's rules"), on the
 * policy's view: listed in order and edited as forms (an admin only), saved with the permission rules as
 * one document. What a session runs in is its own view's (session-sandbox.tsx).
 */
import { useState } from "preact/hooks";
import { NETWORK_MODES, SANDBOX_PROFILES, WORK_ORIGINS } from "@agent-runtime/protocol/sandbox";
import {
  type SandboxRule,
  type SandboxRuleForm,
  sandboxFormOf,
  sandboxMatchText,
  sandboxRuleFromForm,
  sandboxRuleText,
  WORK_ORIGIN_WORDS,
} from "../sandbox-text";
import { RuleEditorForm, RuleList } from "./rule-list";

/** The team's sandbox rules: the first matching one decides each agent server's sandbox. */
export function SandboxRules(props: {
  rules: SandboxRule[];
  isAdmin: boolean;
  onChange: (rules: SandboxRule[]) => void;
  onEditing: (editing: boolean) => void;
}) {
  return (
    <div id="sandbox-section">
      <h3>Sandbox rules</h3>
      <p class="hint">
        What an agent and everything it starts may do on the machine. The first rule matching an agent, a machine and where the work comes from decides; with
        none matching, a person's session runs as today (full, shown as such) and a task, schedule or trigger gets workspace with only its model, the npm
        registry and github.com. A machine's owner can make any of it stricter, never looser.
      </p>
      <RuleList
        id="sandbox-rules"
        item="sandbox-rule"
        noun="sandbox rule"
        rules={props.rules}
        isAdmin={props.isAdmin}
        empty="No sandbox rules: the defaults above apply."
        add={{ id: "sandbox-add", label: "Add a sandbox rule" }}
        badge={(rule) => <span class={`badge sandbox ${rule.profile}`}>{rule.profile}</span>}
        detail={(rule) => `${sandboxMatchText(rule)} → ${sandboxRuleText(rule)}`}
        editor={(rule, done) => <SandboxRuleEditor rule={rule} onDone={done} />}
        onChange={props.onChange}
        onEditing={props.onEditing}
      />
    </div>
  );
}

/** One sandbox rule's fields; `onDone(null)` cancels. */
function SandboxRuleEditor(props: { rule: SandboxRule | null; onDone: (rule: SandboxRule | null) => void }) {
  const [form, setForm] = useState<SandboxRuleForm>(() => sandboxFormOf(props.rule));
  const set = <K extends keyof SandboxRuleForm>(key: K, value: SandboxRuleForm[K]) => setForm({ ...form, [key]: value });
  return (
    <RuleEditorForm
      id="sandbox-rule-editor"
      keep="Keep this sandbox rule"
      onKeep={() => props.onDone(sandboxRuleFromForm(form))}
      onCancel={() => props.onDone(null)}
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
        <select name="profile" value={form.profile} onChange={(e) => set("profile", SANDBOX_PROFILES.find((p) => p === e.currentTarget.value) ?? form.profile)}>
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
        <select name="network" value={form.network} onChange={(e) => set("network", NETWORK_MODES.find((m) => m === e.currentTarget.value) ?? form.network)}>
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
    </RuleEditorForm>
  );
}
