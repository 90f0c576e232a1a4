/**
 * The team's permission policy (docs/architecture.md, "The permission policy"): its rules as a list an
 * admin reorders and edits, saved for every machine at once, and a tester that says what the rules on
 * screen (saved or not) would do with a request. Everyone reads it; only an admin saves.
 */
import { useRef, useState } from "preact/hooks";
import { DECISIONS, type PolicyMachineStatus, TeamPolicy, TOOL_KINDS } from "@agent-runtime/protocol/policy";
import { WORK_ORIGINS } from "@agent-runtime/protocol/sandbox";
import { api, errorText, must, refused, typed } from "../api";
import { decisionText, formOf, matchText, type Rule, type RuleForm, ruleFromForm, verdictText } from "../policy-rules";
import { type SandboxRule, sandboxVerdictText, WORK_ORIGIN_WORDS } from "../sandbox-text";
import { useCan, usePoll } from "../session-context";
import { FoldedForm, Note, Table } from "./parts";
import { AppliesTo, Checks, Choice, RuleEditorForm, RuleList, useFields } from "./rule-list";
import { SandboxRules } from "./sandbox";

export function PolicyView() {
  const isAdmin = useCan("admin");
  const [rules, setRules] = useState<Rule[] | null>(null);
  // The sandbox rules are part of the same document: a save writes both, so neither loses the other.
  const [sandbox, setSandbox] = useState<SandboxRule[]>([]);
  // And what this view does not edit (the questions' deadline): kept as it was.
  const [others, setOthers] = useState<Omit<TeamPolicy, "rules" | "sandbox">>({});
  const [editingSandbox, setEditingSandbox] = useState(false);
  const [etag, setEtag] = useState<string | null>(null);
  const [changed, setChanged] = useState(false);
  const [editing, setEditing] = useState(false);
  const [status, setStatus] = useState<{ version: string; machines: PolicyMachineStatus[] } | null>(null);
  const [note, setNote] = useState("");
  /** Every edit, and every editor opened, counted as it happens: a read that began before one is stale. */
  const touches = useRef(0);
  const touch = () => {
    touches.current++;
  };
  /** Something on screen is not saved, or an editor is open: kept from render to render for a read that answers late. */
  const unsaved = useRef(false);
  unsaved.current = changed || editing || editingSandbox;
  const readPolicy = async () => {
    const res = await api("/v1/config/policy");
    const body: unknown = await res.json().catch(() => null);
    if (!res.ok) throw refused(res.status, body);
    return { etag: res.headers.get("etag"), policy: TeamPolicy.parse(body) };
  };
  const show = ({ etag: read, policy: { rules: list, sandbox: boxes, ...rest } }: Awaited<ReturnType<typeof readPolicy>>) => {
    setEtag(read);
    setRules(list);
    setSandbox(boxes ?? []);
    setOthers(rest);
    setChanged(false);
  };
  const readStatus = async () => setStatus(await must(typed.GET("/v1/config/policy/status")));
  const load = async () => {
    show(await readPolicy());
    await readStatus();
  };
  // The poll never replaces an edit: what it read is shown only if nothing was edited or opened since it
  // began (the person's change may come while it is on its way). Which version each machine holds is news
  // either way.
  const refresh = async () => {
    const before = touches.current;
    const read = await readPolicy();
    if (touches.current === before && !unsaved.current) show(read);
    await readStatus();
  };
  usePoll(() => refresh().catch((err) => setNote(errorText(err))), [], 60_000);
  const edit = (next: Rule[]) => {
    touch();
    setRules(next);
    setChanged(true);
  };
  // The rules as on screen now (a save's answer arrives after renders that its closure did not see).
  const shown = useRef({ rules, sandbox });
  shown.current = { rules, sandbox };
  const save = async () => {
    touch(); // a poll already on its way read what this save replaces
    const sent = { rules, sandbox };
    const res = await api("/v1/config/policy", {
      method: "PUT",
      headers: etag ? { "if-match": etag } : {},
      body: JSON.stringify({ ...others, rules, ...(sandbox.length ? { sandbox } : {}) }),
    });
    if (!res.ok) return setNote(refused(res.status, await res.json().catch(() => null)).message);
    setNote(`saved as version ${res.headers.get("etag")}: every machine's requests are judged by it now, and agents start in its sandboxes`);
    // Edited while it was saved: the edit stays on screen (still to save, over the version just written)
    // instead of being replaced by what was read back.
    if (shown.current.rules !== sent.rules || shown.current.sandbox !== sent.sandbox) {
      setEtag(res.headers.get("etag"));
      await readStatus();
      return;
    }
    await load();
  };
  const list = rules ?? [];
  return (
    <section id="policy-section">
      <h2>Permission policy</h2>
      <p class="hint">
        The first rule that matches an agent's permission request decides it: allow or deny answers it at once (nobody is asked, the transcript and the audit
        log say which rule), ask goes to a person, optionally answered for them after a while. No rule matching means ask.
      </p>
      <RuleList
        id="policy-rules"
        item="rule"
        noun="rule"
        rules={list}
        isAdmin={isAdmin}
        empty={rules ? "No rules: every request goes to a person." : null}
        add={{ id: "policy-add", label: "Add a rule" }}
        badge={(rule) => <span class={`decision ${rule.decision}`}>{decisionText(rule)}</span>}
        detail={matchText}
        editor={(rule, done) => <RuleEditor rule={rule} onDone={done} />}
        onChange={edit}
        onEditing={(open) => {
          touch();
          setEditing(open);
        }}
      />
      <SandboxRules
        rules={sandbox}
        isAdmin={isAdmin}
        onEditing={(open) => {
          touch();
          setEditingSandbox(open);
        }}
        onChange={(next) => {
          touch();
          setSandbox(next);
          setChanged(true);
        }}
      />
      {isAdmin ? (
        <div class="row">
          <button
            id="policy-save"
            type="button"
            onClick={() => save().catch((err) => setNote(errorText(err)))}
            disabled={!changed || editing || editingSandbox}
          >
            Save for the whole team
          </button>
          {changed ? (
            <button type="button" onClick={() => load().catch((err) => setNote(errorText(err)))}>
              Discard changes
            </button>
          ) : null}
        </div>
      ) : null}
      <Note id="policy-msg" text={note} />
      <PolicyTester rules={list} sandbox={sandbox} />
      <Table
        id="policy-status"
        rows={status?.machines ?? []}
        empty={status ? "no machine holds a version yet (they do once one is saved and they connect)" : undefined}
        columns={[
          { label: "machine", cell: (m) => m.machine },
          { label: "holds", cell: (m) => (m.version === status?.version ? `${m.version} (current)` : String(m.version)) },
          { label: "since", cell: (m) => (m.appliedAtMs ? new Date(m.appliedAtMs).toLocaleTimeString() : "—") },
        ]}
      />
    </section>
  );
}

/** Where a rule looks, in words. */
const WHERE: Record<RuleForm["outsideFolder"], string> = {
  any: "anywhere",
  inside: "only inside the session's folder",
  outside: "touching anything outside it",
};

/** One rule's fields; `onDone(null)` cancels. */
function RuleEditor(props: { rule: Rule | null; onDone: (rule: Rule | null) => void }) {
  const [form, set] = useFields<RuleForm>(() => formOf(props.rule));
  return (
    <RuleEditorForm id="rule-editor" keep="Keep this rule" onKeep={() => props.onDone(ruleFromForm(form))} onCancel={() => props.onDone(null)}>
      <label>
        Name <input name="name" value={form.name} onInput={(e) => set("name", e.currentTarget.value)} placeholder="e.g. no deletes" />
      </label>
      <Choice label="Decision" name="decision" value={form.decision} values={DECISIONS} onChange={(decision) => set("decision", decision)} />
      {form.decision === "ask" ? (
        <div class="row">
          <label>
            Answer after (seconds){" "}
            <input
              name="timeoutSeconds"
              inputMode="numeric"
              value={form.timeoutSeconds}
              onInput={(e) => set("timeoutSeconds", e.currentTarget.value)}
              placeholder="never"
            />
          </label>
          <Choice label="with" name="onTimeout" value={form.onTimeout} values={["deny", "allow"]} onChange={(answer) => set("onTimeout", answer)} />
        </div>
      ) : null}
      <Checks legend="Kinds (none: any)" name="kinds" values={TOOL_KINDS} checked={form.kinds} onChange={(kinds) => set("kinds", kinds)} />
      <label>
        Commands, one per line (`*` matches anything)
        <textarea name="commands" rows={2} value={form.commands} onInput={(e) => set("commands", e.currentTarget.value)} placeholder="npm test" />
      </label>
      <label>
        Paths, one per line (globs relative to the session's folder)
        <textarea name="paths" rows={2} value={form.paths} onInput={(e) => set("paths", e.currentTarget.value)} placeholder="src/**" />
      </label>
      <Choice
        label="Where"
        name="outsideFolder"
        value={form.outsideFolder}
        values={["any", "inside", "outside"]}
        words={WHERE}
        onChange={(where) => set("outsideFolder", where)}
      />
      <AppliesTo form={form} set={set} />
    </RuleEditorForm>
  );
}

/** What the rules on screen would do with a request (the worker evaluates them as each machine's object does). */
function PolicyTester(props: { rules: Rule[]; sandbox: SandboxRule[] }) {
  const [request, setRequest] = useState({ agent: "claude", machine: "", cwd: "/home/me/project", kind: "execute", command: "", paths: "", origin: "session" });
  const [answer, setAnswer] = useState("");
  const [sandboxAnswer, setSandboxAnswer] = useState("");
  const set = (key: keyof typeof request, value: string) => setRequest({ ...request, [key]: value });
  const test = async () => {
    const paths = request.paths
      .split("\n")
      .map((p) => p.trim())
      .filter(Boolean);
    const verdict = await must(
      typed.POST("/v1/config/policy/test", {
        body: {
          policy: { rules: props.rules, sandbox: props.sandbox },
          request: {
            agent: request.agent,
            machine: request.machine || "any-machine",
            cwd: request.cwd,
            kind: TOOL_KINDS.find((kind) => kind === request.kind) ?? null,
            title: "",
            command: request.command || null,
            paths,
            origin: WORK_ORIGINS.find((o) => o === request.origin) ?? "session",
          },
        },
      }),
    );
    setAnswer(verdictText(verdict));
    setSandboxAnswer(sandboxVerdictText(verdict.sandbox));
  };
  return (
    <FoldedForm
      id="policy-tester"
      summary="Try a request"
      act={test}
      onError={setAnswer}
      after={
        <>
          <Note id="policy-verdict" text={answer} />
          <Note id="policy-sandbox-verdict" text={sandboxAnswer} />
        </>
      }
    >
      <label>
        Kind{" "}
        <select name="kind" value={request.kind} onChange={(e) => set("kind", e.currentTarget.value)}>
          <option value="">(none given)</option>
          {TOOL_KINDS.map((kind) => (
            <option key={kind} value={kind}>
              {kind}
            </option>
          ))}
        </select>
      </label>
      <label>
        Command <input name="command" value={request.command} onInput={(e) => set("command", e.currentTarget.value)} placeholder="rm -rf ~" />
      </label>
      <label>
        Paths, one per line
        <textarea name="paths" rows={2} value={request.paths} onInput={(e) => set("paths", e.currentTarget.value)} />
      </label>
      <label>
        Session folder <input name="cwd" value={request.cwd} onInput={(e) => set("cwd", e.currentTarget.value)} />
      </label>
      <label>
        Agent <input name="agent" value={request.agent} onInput={(e) => set("agent", e.currentTarget.value)} />
      </label>
      <label>
        Machine <input name="machine" value={request.machine} onInput={(e) => set("machine", e.currentTarget.value)} placeholder="any-machine" />
      </label>
      <label>
        Work from{" "}
        <select name="origin" value={request.origin} onChange={(e) => set("origin", e.currentTarget.value)}>
          {WORK_ORIGINS.map((o) => (
            <option key={o} value={o}>
              {WORK_ORIGIN_WORDS[o]}
            </option>
          ))}
        </select>
      </label>
      <button id="policy-test" type="submit">
        Test
      </button>
    </FoldedForm>
  );
}
