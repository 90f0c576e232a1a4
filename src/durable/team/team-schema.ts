/**
 * The team object's tables (docs/architecture.md, "Storage"), in order (storage/migrations.ts). Append a
 * migration to change them; never edit one that has shipped.
 */
import type { Migration } from "../storage/migrations";

export const TEAM_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "machines, the token index, machines with sessions, the audit log and notification subscriptions (as they stood before versions were kept)",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS machines (
        id TEXT PRIMARY KEY,
        connected INTEGER NOT NULL,
        connected_at_ms INTEGER,
        last_seen_ms INTEGER,
        sidecar_version TEXT,
        platform TEXT
      )`);
      sql.exec(`CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, info TEXT NOT NULL)`);
      // Machines that recorded at least one session: a list of sessions asks only these (written once per machine).
      sql.exec(`CREATE TABLE IF NOT EXISTS session_machines (id TEXT PRIMARY KEY)`);
      sql.exec(`CREATE TABLE IF NOT EXISTS audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at_ms INTEGER NOT NULL,
        token TEXT NOT NULL,
        role TEXT,
        method TEXT NOT NULL,
        route TEXT NOT NULL,
        machine TEXT,
        status INTEGER NOT NULL
      )`);
      // Notification subscriptions: the source of truth; each machine holds a copy of those that may hear of it.
      sql.exec(`CREATE TABLE IF NOT EXISTS subscriptions (id TEXT PRIMARY KEY, owner TEXT NOT NULL, target TEXT NOT NULL, created_at INTEGER NOT NULL)`);
    },
  },
  {
    version: 2,
    does: "schedules: a cron expression in a time zone, the task it starts, when it runs next and its last runs",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS schedules (
        id TEXT PRIMARY KEY, machine TEXT NOT NULL, cron TEXT NOT NULL, timezone TEXT NOT NULL, task TEXT NOT NULL,
        paused INTEGER NOT NULL, created_by TEXT NOT NULL, created_at INTEGER NOT NULL, next_run_at INTEGER, runs TEXT NOT NULL
      )`);
      sql.exec(`CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_run_at)`);
    },
  },
  {
    version: 3,
    does: "GitHub triggers, with their secret, and the delivery ids each has seen (a replay is ignored)",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS triggers (
        id TEXT PRIMARY KEY, secret TEXT NOT NULL, events TEXT NOT NULL, task TEXT NOT NULL,
        created_by TEXT NOT NULL, created_at INTEGER NOT NULL, last_delivery TEXT
      )`);
      sql.exec(`CREATE TABLE IF NOT EXISTS trigger_deliveries (
        trigger_id TEXT NOT NULL, delivery_id TEXT NOT NULL, at_ms INTEGER NOT NULL, PRIMARY KEY (trigger_id, delivery_id)
      )`);
    },
  },
  {
    version: 4,
    does: "GitHub triggers: who may fire a comment trigger (null: the repository's people), and a digest of each delivery's body",
    up(sql) {
      sql.exec(`ALTER TABLE triggers ADD COLUMN authors TEXT`);
      sql.exec(`ALTER TABLE trigger_deliveries ADD COLUMN body_sha256 TEXT`);
      sql.exec(`CREATE INDEX IF NOT EXISTS trigger_deliveries_by_body ON trigger_deliveries (trigger_id, body_sha256)`);
    },
  },
];
