/**
 * The team's one Durable Object: what is shared by every machine of a deployment.
 * It keeps the registry of machines (so `GET /v1/machines` and the default machine
 * need no scan) in its SQLite storage.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { LIMITS } from "../protocol/limits";
import type { SkillsApplyResult } from "../protocol/frames";
import type { Machine, SkillsConfig, SkillsMachineStatus } from "../protocol/resources";

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

/** A machine whose sidecar has not been heard of for this long is shown as disconnected, whatever its last word. */
const STALE_AFTER_MS = LIMITS.heartbeatMs * 3;

export function teamStub(env: Env): DurableObjectStub<TeamObject> {
  return env.TEAM.get(env.TEAM.idFromName("team"));
}

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
