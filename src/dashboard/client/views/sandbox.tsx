/**
 * The team's sandbox rules in the dashboard (docs/architecture.md, "Sandboxes: the team's rules"), on the
 * policy's view: listed in order and edited as forms (an admin only), saved with the permission rules as
 * one document. What a session runs in is its own view's (session-sandbox.tsx).
 */
import { type NetworkMode, SANDBOX_PROFILES, type SandboxProfile, WORK_ORIGINS } from "@agent-runtime/protocol/sandbox";
import {
  type SandboxRule,
  type SandboxRuleForm,
  sandboxFormOf,
  sandboxMatchText,
  sandboxRuleFromForm,
  sandboxRuleText,
  WORK_ORIGIN_WORDS,
} from "../sandbox-text";
import { AppliesTo, Checks, Choice, RuleEditorForm, RuleList, useFields } from "./rule-list";

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

/** A sandbox's profile and network, in words. */
const PROFILE_WORDS: Record<SandboxProfile, string> = {
  "read-only": "read-only: writes only a private temp folder",
  workspace: "workspace: writes its folder and temp",
  full: "full: no sandbox (the sidecar user's rights)",
};
const NETWORK_WORDS: Record<NetworkMode, string> = { allowlist: "only the hosts listed", none: "none", open: "open" };

/** One sandbox rule's fields; `onDone(null)` cancels. */
function SandboxRuleEditor(props: { rule: SandboxRule | null; onDone: (rule: SandboxRule | null) => void }) {
  const [form, set] = useFields<SandboxRuleForm>(() => sandboxFormOf(props.rule));
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
      <Checks
        legend="Where the work comes from (none: any)"
        name="origins"
        values={WORK_ORIGINS}
        checked={form.origins}
        words={WORK_ORIGIN_WORDS}
        onChange={(origins) => set("origins", origins)}
      />
      <AppliesTo form={form} set={set} />
      <Choice
        label="Profile"
        name="profile"
        value={form.profile}
        values={SANDBOX_PROFILES}
        words={PROFILE_WORDS}
        onChange={(profile) => set("profile", profile)}
      />
      <Choice
        label="Network"
        name="network"
        value={form.network}
        values={["allowlist", "none", "open"]}
        words={NETWORK_WORDS}
        onChange={(network) => set("network", network)}
      />
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
