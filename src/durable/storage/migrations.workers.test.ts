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
import { type Migration, migrate, schemaVersion } from "./migrations";

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
        // Version 3 (logins and usage): no login methods, no usage, and a server that cannot delete sessions.
        login: null,
        usage: null,
      });
      expect(store.entries(`ses-0123456789abcdef-${machine}`, 0, 10).map((e) => [e.seq, e.kind])).toEqual([
        [1, "prompt"],
        [2, "text"],
      ]);
      expect(store.server("s1")).toMatchObject({ agent: "mock", can_load: 1, cursor: 7, can_delete: 0 });
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
    });
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
      sql.exec(`INSERT INTO tokens (id, info) VALUES ('0123456789abcdef', '{"id":"0123456789abcdef","name":"alice","revokedAtMs":null,"createdAtMs":1}')`);
      expect(migrate(state.storage, "team", TEAM_MIGRATIONS)).toBe(TEAM_MIGRATIONS.length);
      expect(sql.exec(`SELECT COUNT(*) AS n FROM schedules`).one().n).toBe(0); // version 2
      expect(sql.exec(`SELECT COUNT(*) AS n FROM triggers`).one().n).toBe(0); // version 3
    });
    expect(await runInDurableObject(stub, (instance: TeamObject) => instance.listSchedules())).toEqual([]);
    const audit = await runInDurableObject(stub, (instance: TeamObject) => instance.readAudit({}));
    expect(audit.entries).toEqual([expect.objectContaining({ token: "alice", route: "/v1/tokens", status: 201 })]);
    const tokens = await runInDurableObject(stub, (instance: TeamObject) => instance.listTokens());
    expect(tokens.map((t) => t.name)).toEqual(["alice"]);
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
