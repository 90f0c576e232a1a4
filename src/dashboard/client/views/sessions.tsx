/** The first view: every machine's sessions, waiting ones first, and a way to start one. */
import { useEffect, useState } from "preact/hooks";
import type { AgentInfo } from "@agent-runtime/protocol/agents";
import type { Machine } from "@agent-runtime/protocol/machines";
import type { Session } from "@agent-runtime/protocol/sessions";
import { errorText, must, typedMachine } from "../api";
import { notifyThisDevice, PUSH_SERVICE_WAIT_MS } from "../notify";
import { href, navigate } from "../router";
import { useCan } from "../session-context";
import { startSession } from "../start-session";
import { sessionLine } from "../transcript";
import { CheckBox, Link, Note, WideInput } from "./parts";

export function SessionsView(props: { sessions: Session[] | null; offline: boolean; machines: Machine[]; reload: () => void }) {
  const waiting = props.sessions?.filter((s) => s.state === "waiting").length ?? 0;
  const [notice, setNotice] = useState("");
  const [subscribing, setSubscribing] = useState(false);
  const notifyMe = () => {
    setSubscribing(true);
    setNotice(`asking this browser's push service (up to ${PUSH_SERVICE_WAIT_MS / 1000} s)…`);
    notifyThisDevice()
      .then(setNotice, (err) => setNotice(errorText(err)))
      .finally(() => setSubscribing(false));
  };
  const canAct = useCan("member");
  return (
    <>
      <section id="sessions">
        <div class="row">
          <h2 class="grow">
            Sessions{" "}
            <span id="sessions-waiting" class="muted">
              {waiting ? `· ${waiting} waiting for you` : ""}
              {props.offline ? " · offline: the last sessions seen" : ""}
            </span>
          </h2>
          <button id="sessions-refresh" type="button" onClick={props.reload}>
            Refresh
          </button>
        </div>
        <div class="row">
          <button id="notify-me" type="button" disabled={subscribing} aria-busy={subscribing} onClick={notifyMe}>
            {subscribing ? "Subscribing…" : "Notify me on this device"}
          </button>
          <span id="notify-msg" class="muted" role="status">
            {notice}
          </span>
        </div>
        <div id="sessions-list">
          {props.sessions?.map((s) => (
            <Link key={s.id} class="session" href={href({ view: "session", id: s.id })} data-session={s.id}>
              <span class={`badge ${s.state}`}>{s.state}</span>
              <span class="title">{s.title || "(no prompt yet)"}</span>
              <span class="muted">{sessionLine(s)}</span>
              {s.pending ? <span class="ask">asks: {s.pending.title}</span> : null}
            </Link>
          ))}
          {props.sessions?.length === 0 ? <p class="muted">No session yet: start one below, or through the API.</p> : null}
        </div>
      </section>
      {canAct ? <NewSession machines={props.machines} /> : null}
    </>
  );
}

/**
 * Start a session: a connected machine, one of its installed agents, a folder. `installed`: the machine's
 * installed agents as the page around it last read them; when they change (one installed there), the
 * list is asked again, in place: what the person typed stays.
 */
export function NewSession(props: { machines: Machine[]; machine?: string; installed?: readonly string[] | undefined }) {
  const connected = props.machines.filter((m) => m.connected);
  const [machine, setMachine] = useState(props.machine ?? "");
  const chosen = machine || connected[0]?.id || "";
  const [agents, setAgents] = useState<AgentInfo[] | null>(null);
  const [agent, setAgent] = useState("");
  const [cwd, setCwd] = useState("");
  const [isolated, setIsolated] = useState(false);
  const [base, setBase] = useState("");
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const present = connected.some((m) => m.id === chosen);
  const installedNow = props.installed?.join(" ");
  // Asked once per machine chosen (and again when it comes back, or its agents change), not polled: an
  // open Sessions page must not keep asking a machine.
  useEffect(() => {
    if (!chosen) return;
    let current = true;
    must(typedMachine(chosen).GET("/v1/agents")).then(
      (list) => current && setAgents(list.agents.filter((a) => a.installed)),
      () => current && setAgents([]),
    );
    return () => {
      current = false;
    };
  }, [chosen, present, installedNow]);
  const pickedAgent = agents?.find((a) => a.id === agent) ?? agents?.[0];
  const picked = pickedAgent?.id ?? "";
  const start = async (e: Event) => {
    e.preventDefault();
    if (!chosen || !pickedAgent) return;
    setBusy(true);
    setNote(`starting ${picked} on ${chosen}…`);
    try {
      const worktree = isolated ? (base.trim() ? { base: base.trim() } : {}) : null;
      const session = await startSession(chosen, pickedAgent.id, cwd.trim(), worktree);
      navigate(href({ view: "session", id: session.id }));
    } catch (err) {
      setNote(errorText(err));
      setBusy(false);
    }
  };
  return (
    <section id="new-session">
      <h2>Start a session</h2>
      {connected.length === 0 && !props.machine ? (
        <p class="muted">No machine is connected.</p>
      ) : (
        <form class="row" onSubmit={start}>
          {props.machine ? null : (
            <select id="new-machine" aria-label="machine" value={chosen} onChange={(e) => setMachine(e.currentTarget.value)}>
              {connected.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.id}
                </option>
              ))}
            </select>
          )}
          <select id="new-agent" aria-label="agent" value={picked} onChange={(e) => setAgent(e.currentTarget.value)}>
            {agents?.map((a) => (
              <option key={a.id} value={a.id}>
                {a.id}
              </option>
            ))}
          </select>
          <WideInput id="new-cwd" placeholder="folder (empty: the machine's default)" value={cwd} onValue={setCwd} />
          <CheckBox id="new-worktree" checked={isolated} onValue={setIsolated}>
            in a new worktree
          </CheckBox>
          {isolated ? (
            <input
              id="new-base"
              placeholder="from branch (default: current)"
              aria-label="base branch"
              spellcheck={false}
              value={base}
              onInput={(e) => setBase(e.currentTarget.value)}
            />
          ) : null}
          <button id="new-start" class="primary" type="submit" disabled={busy || !picked}>
            Start
          </button>
        </form>
      )}
      {agents?.length === 0 ? <p class="muted">No agent is installed on {chosen}: install one from its Agents tab.</p> : null}
      <Note id="new-msg" text={note} />
    </section>
  );
}
