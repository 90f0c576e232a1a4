/**
 * Versioned schema migrations for a Durable Object's SQLite (docs/architecture.md, "Storage"). Each store
 * names its schema and lists its migrations in order; `migrate` runs, in one transaction, those an
 * object has not run yet and records the version it reached, so an object written by any earlier
 * release opens with the current tables and nothing it kept is lost.
 *
 * Version 1 of every schema is its tables as they stood before versions were recorded (`CREATE … IF NOT
 * EXISTS`): an object written then has no version row, runs version 1 as a no-op, and is adopted as it is.
 */

import { z } from "zod";
import { firstRow } from "./stored";

export interface Migration {
  /** 1, 2, 3, … in order, none skipped. */
  version: number;
  /** What it changes, for a reader of the list. */
  does: string;
  up(sql: SqlStorage): void;
}

const VERSIONS_TABLE = "_schema_versions";
const SchemaVersion = z.object({ version: z.number().int() });

/** The version `schema` is at in this storage (0: never migrated). */
export function schemaVersion(sql: SqlStorage, schema: string): number {
  sql.exec(`CREATE TABLE IF NOT EXISTS ${VERSIONS_TABLE} (schema TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
  return firstRow(sql, SchemaVersion, `SELECT version FROM ${VERSIONS_TABLE} WHERE schema = ?`, schema)?.version ?? 0;
}

/**
 * Bring `schema` to its newest version; answers the version reached. A storage written by a newer
 * release than this code (a rollback) is refused loudly rather than misread.
 */
export function migrate(storage: DurableObjectStorage, schema: string, migrations: readonly Migration[]): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`${schema}: migration ${i + 1} is numbered ${m.version}`);
  });
  const latest = migrations.length;
  return storage.transactionSync(() => {
    const sql = storage.sql;
    const current = schemaVersion(sql, schema);
    if (current > latest) throw new Error(`${schema}: this storage is at version ${current}, newer than this code (${latest}); deploy the newer release`);
    for (const m of migrations.slice(current)) m.up(sql);
    if (current !== latest) {
      sql.exec(`INSERT INTO ${VERSIONS_TABLE} (schema, version) VALUES (?, ?) ON CONFLICT (schema) DO UPDATE SET version = excluded.version`, schema, latest);
    }
    return latest;
  });
}

/**
 * A store whose tables are made when first used, so that an object that never uses the feature pays
 * nothing for it: `sql` brings the schema to its newest version on first use; `has(table)` says whether
 * an earlier use made a table, without making it.
 */
export class LazySchema {
  private migrated = false;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly schema: string,
    private readonly migrations: readonly Migration[],
  ) {}

  get sql(): SqlStorage {
    if (!this.migrated) {
      migrate(this.storage, this.schema, this.migrations);
      this.migrated = true;
    }
    return this.storage.sql;
  }

  has(table: string): boolean {
    return this.migrated || this.storage.sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, table).toArray().length > 0;
  }
}
