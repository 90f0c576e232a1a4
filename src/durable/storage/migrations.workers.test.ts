/**
 * Schema migrations inside workerd, on the objects' own SQLite: a storage written before versions were
 * kept (the machine's sessions and deliveries, the team's tables as the previous release wrote them) is
 * adopted as version 1 with everything it held; a later migration runs once, in order; a storage newer
 * than the code is refused.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MachineObject } from "../machine/machine";
import type { TeamObject } from "../team/team";
import { SESSION_MIGRATIONS, SessionStore } from "../sessions/session-store";
import { DELIVERY_MIGRATIONS } from "../notifications/deliverer";
import { TEAM_MIGRATIONS } from "../team/team-schema";
import { TASK_MIGRATIONS } from "../tasks/task-store";
import { RunStore } from "../attempts/run-store";
import { LazySchema, type Migration, migrate, schemaVersion } from "./migrations";
import { getStored, jsonText, rows, UnreadableRecord, writeRow } from "./stored";
import { z } from "zod";

/** The previous release's tables, exactly as it created them (no version recorded). */
const PREVIOUS_SESSIONS = [
  `CREATE TABLE sessions (
      id TEXT PRIMARY KEY, acp_session_id TEXT NOT NULL, server_id TEXT NOT NULL, agent TEXT NOT NULL, agent_version TEXT,
      cwd TEXT NOT NULL, mcp_servers TEXT NOT NULL, title TEXT, title_from_agent INTEGER NOT NULL DEFAULT 0,
      created_by TEXT NOT NULL, created_at INTEGER NOT NULL, last_activity INTEGER NOT NULL, state TEXT NOT NULL,
      pending TEXT, failure TEXT, resumable INTEGER NOT NULL, continued_from TEXT, primer TEXT,
      next_seq INTEGER NOT NULL, entries INTEGER NOT NULL, bytes INTEGER NOT NULL, compacted_through INTEGER NOT NULL,
      turn_started_at INTEGER
    )`,
  `CREATE UNIQUE INDEX sessions_by_acp ON sessions (server_id, acp_session_id)`,
  `CREATE INDEX sessions_by_activity ON sessions (last_activity DESC, id DESC)`,
  `CREATE TABLE transcript (
      session_id TEXT NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, bytes INTEGER NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`,
  `CREATE TABLE acp_servers (
      server_id TEXT PRIMARY KEY, agent TEXT NOT NULL, initialize TEXT, auth_method TEXT,
      can_resume INTEGER NOT NULL DEFAULT 0, can_load INTEGER NOT NULL DEFAULT 0, can_close INTEGER NOT NULL DEFAULT 0,
      agent_version TEXT, cursor INTEGER NOT NULL DEFAULT 0
    )`,
];

function dropAll(sql: SqlStorage): void {
  const tables = sql
    .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'`)
    .toArray();
  for (const { name } of tables) sql.exec(`DROP TABLE IF EXISTS "${name}"`);
}

describe("a machine's sessions written by the previous release", () => {
  it("open as version 1 with every record, entry and server they held", async () => {
    const machine = "migrated-laptop";
    const stub = env.MACHINE.get(env.MACHINE.idFromName(machine)) as DurableObjectStub<MachineObject>;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      dropAll(sql);
      for (const statement of PREVIOUS_SESSIONS) sql.exec(statement);
      sql.exec(
        `INSERT INTO sessions VALUES ('ses-0123456789abcdef-${machine}', 'acp-1', 's1', 'mock', '1.0', '/home/me', '[]', 'Fix the build', 0,
          'API_TOKEN', 1, 2, 'idle', NULL, NULL, 1, NULL, NULL, 3, 2, 40, 0, NULL)`,
      );
      sql.exec(`INSERT INTO transcript VALUES ('ses-0123456789abcdef-${machine}', 1, 1, 'prompt', '{"text":"fix it"}', 17)`);
      sql.exec(`INSERT INTO transcript VALUES ('ses-0123456789abcdef-${machine}', 2, 2, 'text', '{"text":"done"}', 15)`);
      sql.exec(`INSERT INTO acp_servers VALUES ('s1', 'mock', '{"protocolVersion":1}', NULL, 0, 1, 0, '1.0', 7)`);
      expect(schemaVersion(sql, "sessions")).toBe(0);

      const store = new SessionStore(state.storage);
      expect(schemaVersion(sql, "sessions")).toBe(SESSION_MIGRATIONS.length);
      // Version 2 (review and ship) adds the worktree and the last turn's summary: none for a record made before.
      expect(store.row(`ses-0123456789abcdef-${machine}`)).toMatchObject({
        title: "Fix the build",
        entries: 2,
        next_seq: 3,
        worktree: null,
        last_changes: null,
        // Version 3 (sandboxes): none recorded for a session or a server from before.
        sandbox: null,
        // Version 4 (logins and usage): no login methods, no usage, and a server that cannot delete sessions.
        login: null,
        usage: null,
      });
      expect(store.entries(`ses-0123456789abcdef-${machine}`, 0, 10).map((e) => [e.seq, e.kind])).toEqual([
        [1, "prompt"],
        [2, "text"],
      ]);
      expect(store.server("s1")).toMatchObject({ agent: "mock", can_load: 1, cursor: 7, sandbox: null, can_delete: 0 });
      // Opened again: nothing runs twice.
      new SessionStore(state.storage);
      expect(store.count()).toBe(1);
    });
    // The object reads it as its own.
    const listed = await runInDurableObject(stub, (instance: MachineObject) => instance.getSession(`ses-0123456789abcdef-${machine}`));
    expect(listed).toMatchObject({
      title: "Fix the build",
      cwd: "/home/me",
      agent: "mock",
      worktree: null,
      lastChanges: null,
      login: null,
      usage: null,
      waiting: null,
      sandbox: null,
    });
  });

  it("keeps its tasks: a task from before origins were kept reads as a caller's", async () => {
    const machine = "migrated-tasks";
    const stub = env.MACHINE.get(env.MACHINE.idFromName(machine)) as DurableObjectStub<MachineObject>;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      dropAll(sql);
      migrate(state.storage, "tasks", TASK_MIGRATIONS.slice(0, 1));
      sql.exec(
        `INSERT INTO tasks (id, agent, cwd, title, prompt, deadline_s, notify, state, created_by, created_at)
         VALUES ('task-0123456789abcdef-${machine}', 'mock', '/srv', 'old', '[]', 60, 1, 'succeeded', 'API_TOKEN', 1)`,
      );
    });
    const task = await runInDurableObject(stub, (instance: MachineObject) => instance.taskCall({ op: "get", id: `task-0123456789abcdef-${machine}` }));
    expect(task).toMatchObject({ ok: true, value: { title: "old", origin: "task" } });
  });

  it("keeps its deliveries: the deliveries schema is adopted the same way", async () => {
    const stub = env.MACHINE.get(env.MACHINE.idFromName("migrated-deliveries")) as DurableObjectStub<MachineObject>;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      dropAll(sql);
      DELIVERY_MIGRATIONS[0]!.up(sql); // what the previous release created, with no version row
      sql.exec(
        `INSERT INTO delivery_attempts (delivery_id, subscription_id, event, event_id, machine, attempt, at_ms, outcome, http_status, error)
         VALUES ('d1', 'sub-1', 'turn.finished', 'e1', 'm', 1, 5, 'delivered', 204, NULL)`,
      );
      expect(migrate(state.storage, "deliveries", DELIVERY_MIGRATIONS)).toBe(1);
      expect(sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM delivery_attempts`).one().n).toBe(1);
    });
  });
});

describe("the team's tables written by the previous release", () => {
  it("open as version 1 with its tokens, audit entries and subscriptions, then gain the schedules of version 2 and the triggers of version 3", async () => {
    const stub = env.TEAM.get(env.TEAM.idFromName("migrated-team")) as DurableObjectStub<TeamObject>;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      dropAll(sql);
      TEAM_MIGRATIONS[0]!.up(sql); // the same statements the previous release ran in its constructor
      sql.exec(`INSERT INTO audit (at_ms, token, role, method, route, machine, status) VALUES (1, 'alice', 'admin', 'POST', '/v1/tokens', NULL, 201)`);
      sql.exec(
        `INSERT INTO tokens (id, info) VALUES ('0123456789abcdef', '{"id":"0123456789abcdef","name":"alice","role":"member","machines":"*","createdAtMs":1,"createdBy":"API_TOKEN","expiresAtMs":null,"lastUsedMs":null,"revokedAtMs":null}')`,
      );
      expect(migrate(state.storage, "team", TEAM_MIGRATIONS)).toBe(TEAM_MIGRATIONS.length);
      expect(sql.exec(`SELECT COUNT(*) AS n FROM schedules`).one().n).toBe(0); // version 2
      expect(sql.exec(`SELECT COUNT(*) AS n FROM triggers`).one().n).toBe(0); // version 3
    });
    expect(await runInDurableObject(stub, (instance: TeamObject) => instance.listTaskRecords("schedules"))).toEqual([]);
    const audit = await runInDurableObject(stub, (instance: TeamObject) => instance.readAudit({}));
    expect(audit.entries).toEqual([expect.objectContaining({ token: "alice", route: "/v1/tokens", status: 201 })]);
    const tokens = await runInDurableObject(stub, (instance: TeamObject) => instance.listTokens());
    expect(tokens.map((t) => t.name)).toEqual(["alice"]);
  });
});

describe("the team's triggers as version 3 wrote them", () => {
  it("keep working at version 4: who may fire a comment trigger is the repository's people; the ids seen stay seen", async () => {
    const stub = env.TEAM.get(env.TEAM.idFromName("migrated-triggers")) as DurableObjectStub<TeamObject>;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      dropAll(sql);
      expect(migrate(state.storage, "team", TEAM_MIGRATIONS.slice(0, 3))).toBe(3); // the previous release's code
      sql.exec(
        `INSERT INTO triggers (id, secret, events, task, created_by, created_at, last_delivery) VALUES (?, ?, ?, ?, 'alice', 1, NULL)`,
        "trg-0123456789abcdef",
        "whsec-0123456789abcdef",
        JSON.stringify([{ on: "issue_comment", prefix: "/agent" }]),
        JSON.stringify({ machine: "laptop", agent: "mock", cwd: "/srv/app", prompt: "{{comment}}" }),
      );
      sql.exec(`INSERT INTO trigger_deliveries (trigger_id, delivery_id, at_ms) VALUES ('trg-0123456789abcdef', 'd-old', ?)`, Date.now());
      expect(migrate(state.storage, "team", TEAM_MIGRATIONS)).toBe(TEAM_MIGRATIONS.length);
    });
    const trigger = await runInDurableObject(stub, (instance: TeamObject) => instance.getTaskRecord("triggers", "trg-0123456789abcdef"));
    expect(trigger).toMatchObject({ authors: { associations: ["OWNER", "MEMBER", "COLLABORATOR"], logins: [] }, createdBy: "alice" });
    // A delivery id seen before the migration is still a replay (its signature is checked first).
    const body = "{}";
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode("whsec-0123456789abcdef"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)));
    const signature = `sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
    const outcome = await runInDurableObject(stub, (instance: TeamObject) =>
      instance.githubDelivery("trg-0123456789abcdef", { event: "issue_comment", delivery: "d-old", signature, body }),
    );
    expect(outcome).toMatchObject({ outcome: "replayed" });
  });
});

describe("migrate", () => {
  const v1: Migration = { version: 1, does: "a table", up: (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT)`) };
  const v2: Migration = { version: 2, does: "a column", up: (sql) => sql.exec(`ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0`) };

  it("runs each later migration once, in order, keeping what was there; refuses a storage newer than the code", async () => {
    const stub = env.TEAM.get(env.TEAM.idFromName("migrate-helper")) as DurableObjectStub<TeamObject>;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      expect(migrate(state.storage, "notes", [v1])).toBe(1);
      sql.exec(`INSERT INTO notes (text) VALUES ('kept')`);
      expect(migrate(state.storage, "notes", [v1, v2])).toBe(2);
      expect(migrate(state.storage, "notes", [v1, v2])).toBe(2); // a second time: ALTER would fail if it ran again
      expect(sql.exec<{ text: string; pinned: number }>(`SELECT text, pinned FROM notes`).toArray()).toEqual([{ text: "kept", pinned: 0 }]);
      expect(() => migrate(state.storage, "notes", [v1])).toThrow(/newer than this code/);
      expect(() => migrate(state.storage, "other", [v2])).toThrow(/numbered 2/);
    });
  });
});

describe("stored data of an older release: read through its schema, or refused clearly", () => {
  it("a token whose stored record lacks what every release wrote is refused, naming its table; a record of the shape is read", async () => {
    const stub = env.TEAM.get(env.TEAM.idFromName("stored-tokens")) as DurableObjectStub<TeamObject>;
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec(`DELETE FROM tokens`);
      state.storage.sql.exec(`INSERT INTO tokens (id, info) VALUES ('00000000000000aa', '{"id":"00000000000000aa","name":"old","createdAtMs":1}')`);
    });
    await expect(runInDurableObject(stub, (instance: TeamObject) => instance.listTokens())).rejects.toThrow(
      /a row of tokens: stored data this release cannot read .*role/,
    );
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec(
        `UPDATE tokens SET info = '{"id":"00000000000000aa","name":"old","role":"viewer","machines":["m1"],"createdAtMs":1,"createdBy":"API_TOKEN","expiresAtMs":null,"lastUsedMs":null,"revokedAtMs":null}'`,
      );
    });
    const tokens = await runInDurableObject(stub, (instance: TeamObject) => instance.listTokens());
    expect(tokens).toEqual([expect.objectContaining({ name: "old", role: "viewer", machines: ["m1"] })]);
  });

  it("a transcript entry of a kind this release does not know is refused; the entries of the previous release are read", async () => {
    const machine = "stored-transcript";
    const id = `ses-00000000000000ab-${machine}`;
    const stub = env.MACHINE.get(env.MACHINE.idFromName(machine)) as DurableObjectStub<MachineObject>;
    await runInDurableObject(stub, (_, state) => {
      const store = new SessionStore(state.storage);
      state.storage.sql.exec(`INSERT INTO transcript VALUES (?, 1, 1, 'prompt', '{"text":"fix it"}', 17)`, id);
      expect(store.entries(id, 0, 10)).toEqual([{ seq: 1, atMs: 1, kind: "prompt", text: "fix it" }]);
      state.storage.sql.exec(`INSERT INTO transcript VALUES (?, 2, 2, 'hologram', '{"text":"?"}', 12)`, id);
      expect(() => store.entries(id, 0, 10)).toThrow(UnreadableRecord);
      expect(() => store.entries(id, 0, 10)).toThrow(/a row of transcript: stored data this release cannot read .*kind/);
      state.storage.sql.exec(`UPDATE transcript SET kind = 'text', body = 'not json' WHERE seq = 2 AND session_id = ?`, id);
      expect(() => store.entries(id, 0, 10)).toThrow(/a row of transcript: .*not JSON/);
    });
  });

  it("a key-value entry an older release wrote without a field added since is read; one of another shape is refused", async () => {
    const stub = env.TEAM.get(env.TEAM.idFromName("stored-kv")) as DurableObjectStub<TeamObject>;
    await runInDurableObject(stub, async (_, state) => {
      // A fan-out place as the release before start stamps wrote it: read, with no start.
      const Place = z.object({ after: z.string(), start: z.string().optional() });
      await state.storage.put("place", { after: "m1" });
      expect(await getStored(state.storage, "place", Place)).toEqual({ after: "m1" });
      expect(await getStored(state.storage, "nothing", Place)).toBeUndefined();
      await state.storage.put("place", { after: 7 });
      await expect(getStored(state.storage, "place", Place)).rejects.toThrow(/the stored "place": stored data this release cannot read .*after/);
      // A JSON column through jsonText: read as its schema.
      state.storage.sql.exec(`CREATE TABLE IF NOT EXISTS notes_json (body TEXT NOT NULL)`);
      state.storage.sql.exec(`INSERT INTO notes_json VALUES ('{"after":"m2"}')`);
      expect(rows(state.storage.sql, z.object({ body: jsonText(Place) }), `SELECT body FROM notes_json`)).toEqual([{ body: { after: "m2" } }]);
    });
  });
});

describe("the team's policy a machine's object keeps", () => {
  it("is read back with its sandbox rules after the object forgot it; one that does not read is refused, not taken as no rules", async () => {
    const stub = env.MACHINE.get(env.MACHINE.idFromName("kept-policy")) as DurableObjectStub<MachineObject>;
    const document = {
      version: 3,
      config: { rules: [], sandbox: [{ match: { agents: ["claude"] }, profile: "workspace", network: { mode: "allowlist", allow: ["127.0.0.1:18555"] } }] },
      updatedAtMs: 1,
    };
    await runInDurableObject(stub, (instance, state) => {
      state.storage.kv.put("policy", document);
      const gate = (instance as unknown as { parts: { sessions: { gate: { policy: unknown; current(): unknown } } } }).parts.sessions.gate;
      gate.policy = null;
      expect(gate.current()).toMatchObject(document);
      state.storage.kv.put("policy", { version: 4, config: { rules: "all" }, updatedAtMs: 2 });
      gate.policy = null;
      expect(() => gate.current()).toThrow(UnreadableRecord);
      // Refused each time it is read (a sandbox then refuses to start an agent), never remembered as no rules.
      expect(() => gate.current()).toThrow(UnreadableRecord);
      expect(gate.policy).toBeNull();
    });
  });
});

describe("a store's tables made when first used, its rows written whole", () => {
  const notes: Migration = { version: 1, does: "a table", up: (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS lazy_notes (id INTEGER PRIMARY KEY, text TEXT)`) };
  const Note = z.object({ id: z.number(), text: z.string() });

  it("makes no table until used, then migrates once; a row written again replaces it, one that must be new is refused when it is not", async () => {
    const stub = env.TEAM.get(env.TEAM.idFromName("lazy-schema")) as DurableObjectStub<TeamObject>;
    await runInDurableObject(stub, (_, state) => {
      const db = new LazySchema(state.storage, "lazy_notes", [notes]);
      expect(db.has("lazy_notes")).toBe(false);
      expect(schemaVersion(state.storage.sql, "lazy_notes")).toBe(0);
      writeRow(db.sql, "lazy_notes", { id: 1, text: "first" });
      expect(db.has("lazy_notes")).toBe(true);
      // Another instance (the object woke again) sees the table without making anything.
      expect(new LazySchema(state.storage, "lazy_notes", [notes]).has("lazy_notes")).toBe(true);
      expect(schemaVersion(state.storage.sql, "lazy_notes")).toBe(1);
      writeRow(db.sql, "lazy_notes", { id: 1, text: "again" });
      writeRow(db.sql, "lazy_notes", { id: 2, text: "new" }, "insert");
      expect(() => writeRow(db.sql, "lazy_notes", { id: 2, text: "twice" }, "insert")).toThrow(/UNIQUE/);
      expect(rows(db.sql, Note, `SELECT id, text FROM lazy_notes ORDER BY id`)).toEqual([
        { id: 1, text: "again" },
        { id: 2, text: "new" },
      ]);
    });
  });

  it("an attempt's run whose JSON column does not read is refused, naming its table; one that reads is read whole", async () => {
    const stub = env.MACHINE.get(env.MACHINE.idFromName("stored-attempt-runs")) as DurableObjectStub<MachineObject>;
    await runInDurableObject(stub, (_, state) => {
      const store = new RunStore(state.storage);
      expect(store.used()).toBe(false);
      expect(store.ofGroup("grp-000000000001")).toEqual([]);
      const group = "grp-000000000001";
      const run = {
        ...{ group, n: 1, agent: "mock", cwd: "/srv/app", prompt: "race", branch: `agent/${group}-1-mock`, check: null, deadlineSeconds: 600 },
        ...{ base: { branch: "main", commit: "a".repeat(40), agreedOn: "m1" }, policy: null, who: "API_TOKEN", origin: "task" },
      };
      state.storage.sql.exec(`INSERT INTO attempt_runs (grp, n, run, phase) VALUES ('grp-000000000001', 1, 'not json', 'turn')`);
      expect(() => store.get("grp-000000000001", 1)).toThrow(/a row of attempt_runs: stored data this release cannot read .*not JSON/);
      state.storage.sql.exec(
        `UPDATE attempt_runs SET run = ?, worktree = ? WHERE n = 1`,
        JSON.stringify(run),
        JSON.stringify({ repository: "/r", path: "/w", branch: "b" }),
      );
      expect(store.get("grp-000000000001", 1)).toMatchObject({
        group: "grp-000000000001",
        n: 1,
        run,
        worktree: { branch: "b" },
        acp: null,
        discarded: false,
      });
    });
  });
});
