/**
 * The team's configuration: skills, MCP servers and agents for every machine, and the permission policy
 * (admin edits, everyone reads), and your notifications.
 */
import { useState } from "preact/hooks";
import type { AgentsMachineStatus } from "@agent-runtime/protocol/agents-config";
import type { SkillsMachineStatus } from "@agent-runtime/protocol/skills";
import type { Subscription } from "@agent-runtime/protocol/notifications";
import { api, byId, errorText, must, typed } from "../api";
import { useCan, usePoll } from "../session-context";
import { Note, Table } from "./parts";
import { lazyView } from "../lazy";

/** The policy's editor loads with the first visit to this view, not with the dashboard's first script. */
const PolicyView = lazyView(() => import("./policy").then((m) => m.PolicyView));

type Status = Pick<SkillsMachineStatus, "machine" | "version" | "appliedAtMs" | "error"> & {
  skills?: string[];
  servers?: string[];
  agents?: AgentsMachineStatus["agents"];
  errors: ({ source: string; error: string } | { agent: string; error: string })[];
};

const DOCUMENTS = {
  skills: { title: "Team skills", column: "skills", list: (m: Status) => m.skills ?? [], hint: null },
  mcp: { title: "Team MCP servers", column: "servers", list: (m: Status) => m.servers ?? [], hint: null },
  agents: {
    title: "Team agents",
    column: "installed",
    list: (m: Status) => Object.entries(m.agents ?? {}).map(([agent, a]) => `${agent} ${a.installedVersion ?? "—"}`),
    hint: 'Every machine installs these, at the registry\'s version ("latest") or the one pinned, with non-secret settings: {"agents": {"gemini": {"version": "0.61.0"}, "claude": {"env": {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}}}}',
  },
} as const;

function TeamDocument(props: { kind: keyof typeof DOCUMENTS }) {
  const { kind } = props;
  const isAdmin = useCan("admin");
  const [text, setText] = useState("");
  const [etag, setEtag] = useState<string | null>(null);
  const [status, setStatus] = useState<{ version: string; machines: Status[] } | null>(null);
  const [note, setNote] = useState("");
  const load = async () => {
    const res = await api(`/v1/config/${kind}`);
    setEtag(res.headers.get("etag"));
    setText(JSON.stringify(await res.json(), null, 2));
    setStatus(await must(typed.GET(`/v1/config/${kind}/status`)));
  };
  usePoll(() => load().catch((err) => setNote(errorText(err))), [kind], 60_000);
  const save = async () => {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return setNote("not valid JSON");
    }
    const res = await api(`/v1/config/${kind}`, { method: "PUT", headers: etag ? { "if-match": etag } : {}, body: JSON.stringify(body) });
    const answer = (await res.json()) as { detail?: string };
    setNote(res.ok ? `Saved (version ${(res.headers.get("etag") ?? "").replace(/"/g, "")}): machines apply it now.` : (answer.detail ?? `HTTP ${res.status}`));
    await load();
  };
  return (
    <section id={`${kind}-section`}>
      <h2 id={`${kind}-title`}>{DOCUMENTS[kind].title}</h2>
      {DOCUMENTS[kind].hint ? <p class="hint">{DOCUMENTS[kind].hint}</p> : null}
      <textarea
        id={kind}
        aria-labelledby={`${kind}-title`}
        rows={8}
        spellcheck={false}
        readOnly={!isAdmin}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      {isAdmin ? (
        <div class="row">
          <button id={`${kind}-save`} type="button" onClick={save}>
            Save for the whole team
          </button>
        </div>
      ) : null}
      <Note id={`${kind}-msg`} text={note} />
      <Table
        id={`${kind}-status`}
        rows={status?.machines ?? []}
        columns={[
          { label: "machine", cell: (m) => m.machine },
          { label: "applied", cell: (m) => (m.version === status?.version ? `${m.version} (current)` : String(m.version)) },
          { label: "when", cell: (m) => (m.appliedAtMs ? new Date(m.appliedAtMs).toLocaleTimeString() : "—") },
          { label: DOCUMENTS[kind].column, cell: (m) => DOCUMENTS[kind].list(m).join(", ") || "—" },
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

/** The notifications of the signed-in token: mute, test, remove (a device subscribes from the Sessions view). */
function Notifications() {
  const [subscriptions, setSubscriptions] = useState<Subscription[] | null>(null);
  const [note, setNote] = useState("");
  const load = async () => setSubscriptions((await must(typed.GET("/v1/notifications/subscriptions"))).subscriptions);
  usePoll(() => load().catch((err) => setNote(errorText(err))), [], 60_000);
  const act = (work: () => Promise<unknown>, done: string) => () =>
    work().then(
      () => {
        setNote(done);
        return load();
      },
      (err) => setNote(errorText(err)),
    );
  return (
    <section id="notifications">
      <h2>Your notifications</h2>
      <Table
        id="subscriptions"
        rows={subscriptions ?? []}
        empty={subscriptions ? "none: “Notify me on this device” on Sessions (or a webhook through the API)" : undefined}
        rowProps={(s) => ({ "data-subscription": s.id })}
        columns={[
          { label: "kind", cell: (s) => s.kind },
          { label: "to", cell: (s) => s.target },
          { label: "events", cell: (s) => s.events.join(", ") },
          { label: "machines", cell: (s) => s.machines?.join(", ") ?? "all" },
          {
            label: "",
            cell: (s) => (
              <div class="row">
                <button
                  type="button"
                  onClick={act(
                    () => must(typed.PATCH("/v1/notifications/subscriptions/{id}", { ...byId(s.id), body: { muted: !s.muted } })),
                    s.muted ? "unmuted" : "muted",
                  )}
                >
                  {s.muted ? "Unmute" : "Mute"}
                </button>
                <button
                  type="button"
                  onClick={act(() => must(typed.POST("/v1/notifications/subscriptions/{id}/test", byId(s.id))), "a test event is on its way")}
                >
                  Test
                </button>
                <button type="button" onClick={act(() => must(typed.DELETE("/v1/notifications/subscriptions/{id}", byId(s.id))), "removed")}>
                  Remove
                </button>
              </div>
            ),
          },
        ]}
      />
      <Note id="notifications-msg" text={note} />
    </section>
  );
}

export function TeamView() {
  return (
    <>
      <TeamDocument kind="skills" />
      <TeamDocument kind="mcp" />
      <TeamDocument kind="agents" />
      <PolicyView />
      <Notifications />
    </>
  );
}
