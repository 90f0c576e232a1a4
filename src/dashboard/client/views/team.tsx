/**
 * The team's configuration, a tab each so a phone scrolls through one thing at a time: the permission
 * policy first (at `/team`, one tap from the navigation), then the skills, MCP servers and agents every
 * machine gets (forms, team-documents.tsx), and your notifications. An admin edits; everyone reads.
 */
import { useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { byId, errorText, must, typed } from "../api";
import { lazyView } from "../lazy";
import { href, TEAM_TABS, type TeamTab } from "../router";
import { useResource } from "../use-resource";
import { Note, Table, Tabs } from "./parts";

/** The policy's editor and the documents' forms (with the schemas they check against) load with this view. */
const PolicyView = lazyView(() => import("./policy").then((m) => m.PolicyView));
const TeamDocument = lazyView(() => import("./team-documents").then((m) => m.TeamDocument));

const TAB_NAMES: Record<TeamTab, string> = { policy: "Policy", skills: "Skills", mcp: "MCP", agents: "Agents", notifications: "Notifications" };

/** The notifications of the signed-in token: mute, test, remove (a device subscribes from the Sessions view). */
function Notifications() {
  const read = useResource("/v1/notifications/subscriptions", { read: () => must(typed.GET("/v1/notifications/subscriptions")), everyMs: 60_000 });
  const subscriptions = read.data?.subscriptions ?? null;
  const [done, setDone] = useState("");
  const act = (work: () => Promise<unknown>, said: string) => () =>
    work().then(
      () => {
        setDone(said);
        return read.refetch();
      },
      (err) => setDone(errorText(err)),
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
      <Note id="notifications-msg" text={done || read.error} />
    </section>
  );
}

export function TeamView(props: { tab: TeamTab }) {
  let body: ComponentChildren;
  switch (props.tab) {
    case "policy":
      body = <PolicyView />;
      break;
    case "skills":
    case "mcp":
    case "agents":
      body = <TeamDocument key={props.tab} kind={props.tab} />;
      break;
    case "notifications":
      body = <Notifications />;
      break;
  }
  return (
    <div id="team-view">
      <Tabs label="the team's settings" tabs={TEAM_TABS} current={props.tab} href={(tab) => href({ view: "team", tab })} names={TAB_NAMES} />
      {body}
    </div>
  );
}
