/**
 * The team's one Durable Object: what is shared by every machine of a deployment.
 * It keeps the registry of machines (so `GET /v1/machines` and the default machine
 * need no scan), the index of issued API tokens (each token's authority is its own object: see
 * durable/token.ts) and the audit log, in its SQLite storage.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { LIMITS } from "../protocol/limits";
import { sidecarVersionAdvice } from "../protocol/version";
import type { SkillsApplyResult } from "../protocol/frames";
import type { AuditEntry, AuditPage, AuditQuery, Machine, SkillsConfig, SkillsMachineStatus, TokenInfo } from "../protocol/resources";

export interface StoredSkills {
  /** Increases with every change; the ETag is `"<version>"`. */
  version: number;
  config: SkillsConfig;
  updatedAtMs: number | null;
}

export function skillsEtag(version: number): string {
  return `"${version}"`;
}

/** Does an If-Match header allow writing over this version? (`*`, or one of the listed ETags.) */
export function ifMatchAllows(header: string, version: number): boolean {
  return header
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === "*" || t === skillsEtag(version));
}

/** The audit log keeps the newest entries, at most this many and at most this old (docs/architecture.md, "Trust"). */
export const AUDIT_KEEP_ENTRIES = 100_000;
export const AUDIT_KEEP_MS = 90 * 86_400_000;
/** An upper bound on issued tokens, so listing them (one call per token object) stays bounded. */
export const MAX_TOKENS = 1000;

/** A machine whose sidecar has not been heard of for this long is shown as disconnected, whatever its last word. */
const STALE_AFTER_MS = LIMITS.heartbeatMs * 3;

type MachineRow = {
  id: string;
  connected: number;
  connected_at_ms: number | null;
  last_seen_ms: number | null;
  sidecar_version: string | null;
  platform: string | null;
};

export class TeamObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS machines (
      id TEXT PRIMARY KEY,
      connected INTEGER NOT NULL,
      connected_at_ms INTEGER,
      last_seen_ms INTEGER,
      sidecar_version TEXT,
      platform TEXT
    )`);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, info TEXT NOT NULL)`);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS audit (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      at_ms INTEGER NOT NULL,
      token TEXT NOT NULL,
      role TEXT,
      method TEXT NOT NULL,
      route TEXT NOT NULL,
      machine TEXT,
      status INTEGER NOT NULL
    )`);
  }

  // ---------- the index of issued API tokens ----------

  /** False when the team already has MAX_TOKENS live tokens. */
  registerToken(info: TokenInfo): boolean {
    const live = this.ctx.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM tokens WHERE json_extract(info, '$.revokedAtMs') IS NULL`).one().n;
    if (live >= MAX_TOKENS) return false;
    this.ctx.storage.sql.exec(`INSERT INTO tokens (id, info) VALUES (?, ?)`, info.id, JSON.stringify(info));
    return true;
  }

  updateToken(info: TokenInfo): void {
    this.ctx.storage.sql.exec(`UPDATE tokens SET info = ? WHERE id = ?`, JSON.stringify(info), info.id);
  }

  listTokens(): TokenInfo[] {
    return this.ctx.storage.sql
      .exec<{ info: string }>(`SELECT info FROM tokens ORDER BY id`)
      .toArray()
      .map((r) => JSON.parse(r.info) as TokenInfo)
      .sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  // ---------- the audit log ----------

  appendAudit(entry: Omit<AuditEntry, "seq">): void {
    const sql = this.ctx.storage.sql;
    const cursor = sql.exec(
      `INSERT INTO audit (at_ms, token, role, method, route, machine, status) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
      entry.atMs,
      entry.token,
      entry.role,
      entry.method,
      entry.route,
      entry.machine,
      entry.status,
    );
    const seq = Number(cursor.one().seq);
    // Trim now and then rather than on every append: one indexed delete per 256 entries.
    if (seq % 256 === 0) sql.exec(`DELETE FROM audit WHERE seq <= ? OR at_ms < ?`, seq - AUDIT_KEEP_ENTRIES, Date.now() - AUDIT_KEEP_MS);
  }

  readAudit(query: AuditQuery): AuditPage {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (query.before !== undefined) (where.push("seq < ?"), params.push(query.before));
    if (query.token !== undefined) (where.push("token = ?"), params.push(query.token));
    if (query.machine !== undefined) (where.push("machine = ?"), params.push(query.machine));
    if (query.status !== undefined) (where.push("status = ?"), params.push(query.status));
    if (query.sinceMs !== undefined) (where.push("at_ms >= ?"), params.push(query.sinceMs));
    const limit = query.limit ?? 100;
    type Row = { seq: number; at_ms: number; token: string; role: AuditEntry["role"]; method: string; route: string; machine: string | null; status: number };
    const rows = this.ctx.storage.sql
      .exec<Row>(`SELECT * FROM audit ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT ?`, ...params, limit + 1)
      .toArray();
    const entries = rows.slice(0, limit).map((r) => ({ seq: r.seq, atMs: r.at_ms, token: r.token, role: r.role, method: r.method, route: r.route, machine: r.machine, status: r.status }));
    return { entries, nextBefore: rows.length > limit ? entries.at(-1)!.seq : null };
  }

  machineConnected(m: { id: string; connectedAtMs: number; sidecarVersion: string; platform: string }): void {
    this.ctx.storage.sql.exec(
      `INSERT INTO machines (id, connected, connected_at_ms, last_seen_ms, sidecar_version, platform) VALUES (?, 1, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET connected = 1, connected_at_ms = excluded.connected_at_ms, last_seen_ms = excluded.last_seen_ms,
         sidecar_version = excluded.sidecar_version, platform = excluded.platform`,
      m.id,
      m.connectedAtMs,
      Date.now(),
      m.sidecarVersion,
      m.platform,
    );
  }

  machineSeen(id: string, atMs: number): void {
    this.ctx.storage.sql.exec(`UPDATE machines SET last_seen_ms = ?, connected = 1 WHERE id = ?`, atMs, id);
  }

  machineDisconnected(id: string, atMs: number): void {
    this.ctx.storage.sql.exec(`UPDATE machines SET connected = 0, last_seen_ms = ? WHERE id = ?`, atMs, id);
  }

  listMachines(): Machine[] {
    const now = Date.now();
    return this.ctx.storage.sql
      .exec<MachineRow>(`SELECT * FROM machines ORDER BY id`)
      .toArray()
      .map((r) => ({
        id: r.id,
        connected: r.connected === 1 && r.last_seen_ms !== null && now - r.last_seen_ms < STALE_AFTER_MS,
        connectedAtMs: r.connected_at_ms,
        lastSeenMs: r.last_seen_ms,
        sidecarVersion: r.sidecar_version,
        sidecarOutdated: r.sidecar_version !== null && sidecarVersionAdvice(r.sidecar_version).outdated,
        platform: r.platform,
      }));
  }

  // ---------- skills configuration (one per deployment) ----------

  async getSkills(): Promise<StoredSkills> {
    return (await this.ctx.storage.get<StoredSkills>("skills")) ?? { version: 0, config: { sources: [] }, updatedAtMs: null };
  }

  /** Replace the configuration unless `ifMatch` names another version (then: the current one, unchanged). */
  async putSkills(config: SkillsConfig, ifMatch: string | null): Promise<{ ok: boolean; stored: StoredSkills }> {
    const current = await this.getSkills();
    if (ifMatch !== null && !ifMatchAllows(ifMatch, current.version)) return { ok: false, stored: current };
    const stored: StoredSkills = { version: current.version + 1, config, updatedAtMs: Date.now() };
    await this.ctx.storage.put("skills", stored);
    return { ok: true, stored };
  }

  async recordSkillsApplied(machine: string, outcome: { result: SkillsApplyResult } | { error: string; version: number }): Promise<void> {
    const previous = await this.ctx.storage.get<SkillsMachineStatus>(`skills-status:${machine}`);
    const status: SkillsMachineStatus =
      "result" in outcome
        ? { machine, version: skillsEtag(Number(outcome.result.version)), appliedAtMs: outcome.result.appliedAtMs, skills: outcome.result.skills, errors: outcome.result.errors, error: null }
        : { machine, version: previous?.version ?? null, appliedAtMs: previous?.appliedAtMs ?? null, skills: previous?.skills ?? [], errors: previous?.errors ?? [], error: `configuration ${skillsEtag(outcome.version)} not applied: ${outcome.error}` };
    await this.ctx.storage.put(`skills-status:${machine}`, status);
  }

  async skillsStatus(): Promise<SkillsMachineStatus[]> {
    const entries = await this.ctx.storage.list<SkillsMachineStatus>({ prefix: "skills-status:" });
    return [...entries.values()].sort((a, b) => a.machine.localeCompare(b.machine));
  }

  connectedMachineIds(): string[] {
    return this.listMachines()
      .filter((m) => m.connected)
      .map((m) => m.id);
  }
}
