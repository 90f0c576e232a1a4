/**
 * The team's one Durable Object: what is shared by every machine of a deployment.
 * It keeps the registry of machines (so `GET /v1/machines` and the default machine
 * need no scan) in its SQLite storage.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { LIMITS } from "../protocol/limits";
import type { Machine } from "../protocol/resources";

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

  connectedMachineIds(): string[] {
    return this.listMachines()
      .filter((m) => m.connected)
      .map((m) => m.id);
  }
}
