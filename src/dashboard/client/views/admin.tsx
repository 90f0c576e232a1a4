/** Admin: connect a machine (a machine token and the one line to run), API tokens, the audit log. */
import type { TargetedEvent } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { AuditEntry, TokenInfo } from "@agent-runtime/protocol/trust";
import { roleNamed, type RoleName } from "@agent-runtime/protocol/roles";
import { byId, errorText, must, typed } from "../api";
import { when, whoText } from "../format";
import { usePoll } from "../session-context";
import { CopyButton, Note, Table, WideInput } from "./parts";

const EXPIRIES = [
  ["", "never expires"],
  ["86400", "1 day"],
  ["2592000", "30 days"],
  ["7776000", "90 days"],
] as const;

function ConnectMachine(props: { focus: boolean; onChange: () => void }) {
  const [machine, setMachine] = useState("");
  const [expiry, setExpiry] = useState("");
  const [command, setCommand] = useState<string | null>(null);
  const [note, setNote] = useState("");
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (props.focus) {
      input.current?.scrollIntoView({ block: "center" });
      input.current?.focus();
    }
  }, [props.focus]);
  const mint = async (e: Event) => {
    e.preventDefault();
    try {
      const body = { machine: machine.trim(), ...(expiry ? { expiresInSeconds: Number(expiry) } : {}) };
      const minted = await must(typed.POST("/v1/machine-tokens", { body }));
      setCommand(minted.connectCommand);
      setNote(`token generation ${minted.generation}${minted.expiresAtMs ? `, expires ${when(minted.expiresAtMs)}` : ""}`);
      props.onChange();
    } catch (err) {
      setNote(errorText(err));
    }
  };
  const revoke = async () => {
    if (!machine.trim()) return setNote("name the machine first");
    try {
      const revoked = await must(typed.DELETE("/v1/machine-tokens/{machine}", { params: { path: { machine: machine.trim() } } }));
      setCommand(null);
      setNote(`every token of ${revoked.machine} minted before is refused from now on (generation ${revoked.generation})`);
      props.onChange();
    } catch (err) {
      setNote(errorText(err));
    }
  };
  return (
    <section id="connect">
      <h2>Connect a machine</h2>
      <p class="muted">
        Mints a machine token and shows the one line to run on that machine: it installs the sidecar from this deployment (no registry needed) and hands it the
        token through a pipe into a file only its user can read.
      </p>
      <form id="connect-form" class="row" onSubmit={mint}>
        <input
          id="connect-machine"
          ref={input}
          class="grow"
          placeholder="machine id, e.g. alice-laptop"
          required
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]*"
          value={machine}
          onInput={(e) => setMachine(e.currentTarget.value)}
        />
        <select id="connect-expiry" aria-label="expiry" value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
          {EXPIRIES.filter(([v]) => v !== "86400").map(([value, label]) => (
            <option key={value} value={value}>
              {value ? `expires in ${label}` : label}
            </option>
          ))}
        </select>
        <button class="primary" type="submit">
          Mint token
        </button>
        <button id="connect-revoke" type="button" title="refuse every token of this machine from its next connect" onClick={revoke}>
          Revoke its tokens
        </button>
      </form>
      {command ? (
        <div id="connect-out">
          <p class="muted">Run this on the machine (shown once):</p>
          <pre id="connect-command">{command}</pre>
          <CopyButton id="connect-copy" text={command} />
        </div>
      ) : null}
      <Note id="connect-msg" text={note} />
    </section>
  );
}

function Tokens(props: { tick: number; onChange: () => void }) {
  const [tokens, setTokens] = useState<TokenInfo[]>([]);
  const [form, setForm] = useState<{ name: string; role: RoleName; machines: string; expiry: string }>({ name: "", role: "member", machines: "*", expiry: "" });
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState("");
  const load = async () => setTokens((await must(typed.GET("/v1/tokens"))).tokens);
  useEffect(() => {
    load().catch((err) => setError(errorText(err)));
  }, [props.tick]);
  const create = async (e: Event) => {
    e.preventDefault();
    setError("");
    const machines = form.machines.trim();
    try {
      const created = await must(
        typed.POST("/v1/tokens", {
          body: {
            name: form.name.trim(),
            role: form.role,
            machines:
              machines === "*" || !machines
                ? "*"
                : machines
                    .split(",")
                    .map((m) => m.trim())
                    .filter(Boolean),
            ...(form.expiry ? { expiresInSeconds: Number(form.expiry) } : {}),
          },
        }),
      );
      setSecret(created.token);
      // The name is emptied for the next token, unless the person already typed another meanwhile.
      setForm((now) => (now.name === form.name ? { ...now, name: "" } : now));
    } catch (err) {
      setError(errorText(err));
    }
    props.onChange();
  };
  const revoke = async (t: TokenInfo) => {
    try {
      await must(typed.DELETE("/v1/tokens/{id}", byId(t.id)));
    } catch (err) {
      setError(errorText(err));
    }
    props.onChange();
  };
  const field = (key: keyof typeof form) => ({
    value: form[key],
    onInput: (e: TargetedEvent<HTMLInputElement>) => setForm({ ...form, [key]: e.currentTarget.value }),
  });
  return (
    <section id="tokens-section">
      <h2>Tokens</h2>
      <form id="token-form" class="row" onSubmit={create}>
        <input id="token-name" class="grow" placeholder="who holds it, e.g. bob" required maxLength={80} {...field("name")} />
        <select id="token-role" aria-label="role" value={form.role} onChange={(e) => setForm({ ...form, role: roleNamed(e.currentTarget.value) ?? form.role })}>
          <option value="viewer">viewer: reads</option>
          <option value="member">member: acts on machines</option>
          <option value="admin">admin: manages the team</option>
        </select>
        <input id="token-machines" aria-label="machines" placeholder="machines: * or a,b" {...field("machines")} />
        <select id="token-expiry" aria-label="expiry" value={form.expiry} onChange={(e) => setForm({ ...form, expiry: e.currentTarget.value })}>
          {EXPIRIES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
        <button class="primary" type="submit">
          Create
        </button>
      </form>
      {secret ? (
        <div id="token-out">
          <p class="muted">The token, shown this once (only its hash is kept):</p>
          <pre id="token-secret">{secret}</pre>
          <CopyButton id="token-copy" text={secret} />
        </div>
      ) : null}
      <Note id="token-msg" text={error} error />
      <Table
        id="tokens"
        rows={tokens}
        rowProps={(t) => ({ "data-token": t.name })}
        columns={[
          { label: "name", cell: (t) => t.name },
          { label: "role", cell: (t) => t.role },
          { label: "machines", cell: (t) => (t.machines === "*" ? "every machine" : t.machines.join(", ")) },
          { label: "created", cell: (t) => `${when(t.createdAtMs)} by ${whoText(t.createdBy)}` },
          { label: "expires", cell: (t) => (t.expiresAtMs ? when(t.expiresAtMs) : "never") },
          { label: "last used", cell: (t) => when(t.lastUsedMs) },
          {
            label: "",
            cell: (t) =>
              t.revokedAtMs ? (
                <span class="muted">revoked {when(t.revokedAtMs)}</span>
              ) : (
                <button type="button" data-revoke={t.name} onClick={() => revoke(t)}>
                  Revoke
                </button>
              ),
          },
        ]}
      />
    </section>
  );
}

function Audit(props: { tick: number }) {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [next, setNext] = useState<number | null>(null);
  const [filter, setFilter] = useState({ token: "", machine: "" });
  const [error, setError] = useState("");
  const load = async (before?: number) => {
    const query = {
      limit: 50,
      ...(before ? { before } : {}),
      ...(filter.token.trim() ? { token: filter.token.trim() } : {}),
      ...(filter.machine.trim() ? { machine: filter.machine.trim() } : {}),
    };
    const page = await must(typed.GET("/v1/audit", { params: { query } }));
    setEntries((old) => (before ? [...old, ...page.entries] : page.entries));
    setNext(page.nextBefore);
  };
  const reload = () => load().catch((err) => setError(errorText(err)));
  usePoll(reload, [props.tick], 30_000);
  return (
    <section id="audit-section">
      <div class="row">
        <h2 class="grow">Audit log</h2>
        <button id="audit-refresh" type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void reload();
        }}
      >
        <WideInput id="audit-token" placeholder="filter by token name" value={filter.token} onValue={(token) => setFilter({ ...filter, token })} />
        <WideInput id="audit-machine" placeholder="filter by machine" value={filter.machine} onValue={(machine) => setFilter({ ...filter, machine })} />
        <button type="submit">Filter</button>
      </form>
      <Note id="audit-msg" text={error} error />
      <Table
        id="audit"
        rows={entries}
        rowProps={(a): Record<string, string> => (a.status >= 400 ? { class: "error" } : {})}
        columns={[
          { label: "when", cell: (a) => when(a.atMs) },
          { label: "token", cell: (a) => a.token },
          { label: "role", cell: (a) => a.role ?? "—" },
          { label: "call", cell: (a) => `${a.method} ${a.route}` },
          { label: "machine", cell: (a) => a.machine ?? "—" },
          { label: "status", cell: (a) => String(a.status) },
        ]}
      />
      {next !== null ? (
        <button id="audit-older" type="button" onClick={() => load(next).catch((err) => setError(errorText(err)))}>
          Older
        </button>
      ) : null}
    </section>
  );
}

export function AdminView(props: { focusConnect: boolean; onMachinesChange: () => void }) {
  const [tick, setTick] = useState(0);
  const changed = () => setTick((t) => t + 1);
  return (
    <div id="admin">
      <ConnectMachine
        focus={props.focusConnect}
        onChange={() => {
          changed();
          props.onMachinesChange();
        }}
      />
      <Tokens tick={tick} onChange={changed} />
      <Audit tick={tick} />
    </div>
  );
}
