/**
 * The tunnel between a machine's Durable Object (the worker side) and its sidecar.
 *
 * One WebSocket, JSON text frames. Three kinds of traffic:
 *  - calls: `req` (worker → sidecar) answered by exactly one `res` with the same id.
 *    Ids are unique per worker instance; the sidecar remembers recent ids, so a call
 *    re-sent after a reconnect is answered once and never executed twice.
 *  - streams: the worker opens a subscription (`sub`) on a stream (an ACP server's
 *    messages, a process's output) from a sequence number; the sidecar answers with
 *    `ev` batches and finally `end`. After a reconnect the worker re-opens every live
 *    subscription from the last sequence it delivered, so nothing is lost or repeated.
 *  - liveness: `hello`/`welcome` when a tunnel opens; then the sidecar sends PING_FRAME every
 *    heartbeat and the runtime itself answers PONG_FRAME (an auto-response): a heartbeat never wakes
 *    the machine's Durable Object nor runs any of its code (docs/architecture.md, "Idle cost").
 */
import type { ProblemInit } from "./problems";
import type {
  AcpServerList,
  AgentId,
  AgentInfo,
  InstallRequest,
  InstallResult,
  Process,
  ProcessList,
  ProcessLogs,
  SkillsConfig,
  SpawnRequest,
} from "./resources";

export const TUNNEL_PATH_PREFIX = "/_tunnel/";

/** The heartbeat: exactly these texts, so that the runtime can answer without waking the object. */
export const PING_FRAME = '{"t":"ping"}';
export const PONG_FRAME = '{"t":"pong"}';

/** Version of this frame protocol; a sidecar speaking another one is refused with a clear message. */
export const TUNNEL_PROTOCOL_VERSION = 1;

// ---------- operations the worker calls on a sidecar ----------

export type AcpPostResult = { status: 200; body: string } | { status: 202 };

export interface SkillsApplyArgs {
  version: string;
  config: SkillsConfig;
}

export interface SkillsApplyResult {
  version: string;
  /** True when this machine had applied exactly this configuration already: nothing was fetched or copied. */
  unchanged?: boolean;
  appliedAtMs: number;
  /** Every skill installed, in any agent's folder. */
  skills: string[];
  /** Per agent present on the machine: the skills installed in its folder. */
  perAgent: Record<string, string[]>;
  errors: { source: string; error: string }[];
}

/** Every operation: its arguments and its result. Both ends are typed from this one map. */
export interface Ops {
  /** `awaitId`: the id of a request whose response the caller waits for; null for notifications and responses. */
  "acp.post": { args: { serverId: string; agent?: AgentId; message: string; awaitId: string | number | null }; result: AcpPostResult };
  "acp.delete": { args: { serverId: string }; result: { deleted: boolean } };
  "acp.list": { args: Record<string, never>; result: AcpServerList };
  "agents.list": { args: { config: boolean; noCache: boolean }; result: { agents: AgentInfo[] } };
  "agents.get": { args: { agent: AgentId; config: boolean; noCache: boolean }; result: AgentInfo };
  "agents.install": { args: { agent: AgentId; request: InstallRequest }; result: InstallResult };
  "processes.list": { args: Record<string, never>; result: ProcessList };
  "processes.get": { args: { id: string }; result: Process };
  "processes.spawn": { args: SpawnRequest; result: Process };
  "processes.input": { args: { id: string; data: string; encoding: "utf8" | "base64"; eof: boolean }; result: { written: number } };
  "processes.signal": { args: { id: string; signal: "SIGTERM" | "SIGKILL" }; result: Process };
  "processes.delete": { args: { id: string }; result: { deleted: boolean } };
  "processes.logs": { args: { id: string; after: number }; result: ProcessLogs };
  "skills.apply": { args: SkillsApplyArgs; result: SkillsApplyResult };
}
export type OpName = keyof Ops;
export type OpArgs<N extends OpName> = Ops[N]["args"];
export type OpResult<N extends OpName> = Ops[N]["result"];

// ---------- streams ----------

export type StreamRef = { kind: "acp"; serverId: string } | { kind: "logs"; processId: string };

/** One streamed item: its sequence number in its stream and its JSON text (sent as-is, never re-encoded). */
export type StreamEvent = [seq: number, json: string];

/** Why a stream ended: the ACP server exited or was deleted, the process exited, or it never existed. */
export interface StreamEnd {
  code: "exited" | "deleted" | "not_found";
  /** JSON text for a final SSE event (what exited and how). */
  json: string;
}

/** Messages a reader will never get: dropped from a full buffer, or (`tooLarge`) one too big for a frame. */
export interface StreamGap {
  from: number;
  to: number;
  tooLarge?: boolean;
}

// ---------- frames ----------

export type SidecarFrame =
  | {
      t: "hello";
      protocol: number;
      machine: string;
      sidecarVersion: string;
      platform: string;
      heartbeatMs?: number;
      /** Random per sidecar process: a new one means the sidecar restarted, and calls meant for the old one fail. */
      bootId?: string;
    }
  | { t: "res"; id: string; ok: true; value: unknown }
  | { t: "res"; id: string; ok: false; problem: ProblemInit }
  | { t: "ev"; sub: string; events: StreamEvent[]; gap?: StreamGap }
  | { t: "end"; sub: string; end: StreamEnd };

/** What the worker says of a sidecar's version when it greets it. */
export interface SidecarVersionAdvice {
  /** The sidecar version this worker was released with. */
  latest: string;
  outdated: boolean;
  /** How to upgrade, when outdated. */
  upgrade: string | null;
}

export type WorkerFrame =
  | { t: "welcome"; machine: string; sidecar?: SidecarVersionAdvice }
  | { t: "req"; id: string; op: OpName; args: unknown }
  | { t: "sub"; sub: string; stream: StreamRef; after: number }
  | { t: "unsub"; sub: string }
  /** The worker gave up on a call (its deadline passed): the sidecar stops what it started and forgets the id. */
  | { t: "cancel"; id: string }
  | { t: "bye"; reason: string };

/** Parse a frame without trusting it: anything that is not an object with a string `t` is null. */
export function parseFrame<F extends { t: string }>(text: string): F | null {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && typeof (value as { t?: unknown }).t === "string") return value as F;
  } catch {
    // fall through: a malformed frame is dropped by the caller, never thrown across the socket handler
  }
  return null;
}
