/**
 * The tunnel between a machine's Durable Object (the worker side) and its sidecar.
 *
 * One WebSocket. Control frames are JSON text; a frame that carries bytes (a piece of a file) is one
 * binary frame: its control frame as JSON, then the bytes as they are (`encodeFrame`), never base64 in
 * JSON. Three kinds of traffic:
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
 *
 * Every frame is a zod schema, parsed (never cast) by whichever end receives it; every operation has
 * a schema for its arguments (parsed by the sidecar) and for its result (parsed by the worker).
 */
import { z } from "zod";
import { AgentsApplyArgs, AgentsApplyResult } from "./agents-config";
import { RegistryAgent } from "./registry";
import { LIMITS } from "./limits";
import { PROBLEMS, type ProblemCode } from "./problems";
import { AcpServerList } from "./acp";
import { AgentInfo, AgentList, InstallRequest, InstallResult } from "./agents";
import { FsActionResponse, FsEntry, FsMoveResponse, FsStat, FsUploadBatchResponse, FsWriteResponse, MachinePath } from "./files";
import { McpConfig, McpName, McpServerConfig } from "./mcp";
import {
  Process,
  ProcessList,
  ProcessConfig,
  ProcessConfigUpdate,
  ProcessLogs,
  ProcessRunRequest,
  ProcessRunResponse,
  SpawnRequest,
  TerminalSize,
} from "./processes";
import { SkillName, SkillsConfig } from "./skills";
import { AgentId } from "./values";

export const TUNNEL_PATH_PREFIX = "/_tunnel/";

/** The heartbeat: exactly these texts, so that the runtime can answer without waking the object. */
export const PING_FRAME = '{"t":"ping"}';
export const PONG_FRAME = '{"t":"pong"}';

/**
 * Version of this frame protocol; a sidecar speaking another one is refused with a clear message.
 * 2: file pieces travel in binary frames (1 sent them as base64 in JSON).
 */
export const TUNNEL_PROTOCOL_VERSION = 2;

/** Bytes an operation sends or answers: the payload of a binary frame, set on `args.bytes` or `value.bytes`. */
export const Bytes = z.instanceof(Uint8Array);

// ---------- operations the worker calls on a sidecar ----------

export const AcpPostResult = z.union([
  z.object({
    status: z.literal(200),
    body: z.string(),
    /** The last sequence of the server's stream written before this answer (the agent's order, for a reader that wants it). */
    afterSeq: z.number().int().nonnegative().optional(),
  }),
  z.object({ status: z.literal(202) }),
]);
export type AcpPostResult = z.infer<typeof AcpPostResult>;

export const SkillsApplyArgs = z.object({ version: z.string(), config: SkillsConfig });
export type SkillsApplyArgs = z.infer<typeof SkillsApplyArgs>;

export const SkillsApplyResult = z.object({
  version: z.string(),
  /** True when this machine had applied exactly this configuration already: nothing was fetched or copied. */
  unchanged: z.boolean().optional(),
  appliedAtMs: z.number(),
  /** Every skill installed, in any agent's folder. */
  skills: z.array(z.string()),
  /** Per agent present on the machine: the skills installed in its folder. */
  perAgent: z.record(z.string(), z.array(z.string())),
  errors: z.array(z.object({ source: z.string(), error: z.string() })),
});
export type SkillsApplyResult = z.infer<typeof SkillsApplyResult>;

export const McpApplyArgs = z.object({ version: z.string(), config: McpConfig });
export type McpApplyArgs = z.infer<typeof McpApplyArgs>;

export const McpApplyResult = z.object({
  version: z.string(),
  /** True when this machine had written exactly this document for exactly these agents already. */
  unchanged: z.boolean().optional(),
  appliedAtMs: z.number(),
  servers: z.array(z.string()),
  perAgent: z.record(z.string(), z.array(z.string())),
  errors: z.array(z.object({ agent: z.string(), error: z.string() })),
});
export type McpApplyResult = z.infer<typeof McpApplyResult>;

const Nothing = z.object({}).strict();

export const AcpRestoreArgs = z.object({
  serverId: z.string().min(1).max(256),
  agent: AgentId,
  /** The client's own `initialize` params, sent again as they were. */
  initialize: z.record(z.string(), z.unknown()),
  /** The method the client logged in with (`authenticate`), if it did. */
  authMethodId: z.string().max(256).nullable(),
  sessions: z.array(z.object({ sessionId: z.string().max(1024), cwd: z.string().max(4096), mcpServers: z.array(z.record(z.string(), z.unknown())) })).max(256),
  firstSeq: z.number().int().min(1),
});
export type AcpRestoreArgs = z.infer<typeof AcpRestoreArgs>;

export const AcpRestoreResult = z.object({
  /** False when a live server was there already (restored by a call before this one): nothing was done. */
  started: z.boolean(),
  sessions: z.array(z.object({ sessionId: z.string(), how: z.enum(["resume", "load", "none"]), error: z.string().optional() })),
});
export type AcpRestoreResult = z.infer<typeof AcpRestoreResult>;
const Id = z.string().min(1).max(256);
/** An upload staged on the machine: named by the worker, used as a file name there, so plain. */
const UploadId = z.string().regex(/^[A-Za-z0-9-]{8,64}$/);
/** The last piece of an upload, sent with the call that uses it (commit, unpack). */
const LastPiece = z.object({ upload: UploadId, offset: z.number().int().min(0), bytes: Bytes });
const Deleted = z.object({ deleted: z.boolean() });

/** A piece of a file read through the tunnel: its bytes (a binary frame's payload), and what the file was when read. */
export const FileChunk = z.object({ path: z.string(), size: z.number().int().min(0), mtimeMs: z.number(), bytes: Bytes });
export type FileChunk = z.infer<typeof FileChunk>;

// How long the worker waits for an operation's answer, unless a setting says otherwise (the agent's
// turn: ACP_TIMEOUT_MS; an install: INSTALL_TIMEOUT_MS; a process run: its own timeout).
const HALF_MINUTE = 30_000;
const MINUTE = 60_000;
/** One piece of a file (1 MiB) to or from the machine; unpacking a staged archive. */
const FILE_PIECE_MS = 120_000;
/** Starting an agent again and reattaching its sessions (a load replays a whole conversation). */
const RESTORE_MS = 180_000;
/** Asking an agent which sessions it keeps starts a process of it. */
const DISCOVER_MS = 90_000;
/** Cloning several repositories (skills) can take a while. */
const APPLY_MS = 5 * 60_000;
/** Installing an agent: npm, a download, several agents for the team's document. */
const INSTALL_MS = 15 * 60_000;

/**
 * Every operation: how long the worker waits for it (`deadlineMs`), the schema of its arguments and of its result. Total: the sidecar's handler table
 * must name every operation (`satisfies OpHandlers`), so a missing one is a type error, not a 404 at run time.
 */
export const OPS = {
  /** `awaitId`: the id of a request whose response the caller waits for; null for notifications and responses. */
  "acp.post": {
    deadlineMs: LIMITS.acpTimeoutMs,
    args: z.object({
      serverId: Id,
      agent: AgentId.optional(),
      message: z.string(),
      /** What the worker read of the message when it parsed it, so that the sidecar need not parse it again. */
      method: z.string().max(256).nullable().describe("its method; null for a response"),
      cwd: z.string().max(4096).optional().describe("a session/new or session/load: its cwd"),
      awaitId: z.union([z.string(), z.number(), z.null()]),
      /** Where a server started by this call numbers its messages from: after what its earlier incarnation sent. */
      firstSeq: z.number().int().min(1).optional(),
    }),
    result: AcpPostResult,
  },
  /**
   * Start a server's agent again and reattach its sessions (docs/architecture.md, "Sessions"): initialize
   * as the client did, log in as before, then `session/resume` or `session/load` each session. What a load
   * replays is not logged again: readers had it.
   */
  "acp.restore": { deadlineMs: RESTORE_MS, args: AcpRestoreArgs, result: AcpRestoreResult },
  /** The sessions an agent itself lists on the machine (`session/list`), by a short-lived process of it. */
  "acp.discover": {
    deadlineMs: DISCOVER_MS,
    args: z.object({ agent: AgentId, cwd: z.string().max(4096).optional() }),
    result: z.object({
      supported: z.boolean(),
      sessions: z.array(z.object({ sessionId: z.string(), cwd: z.string(), title: z.string().nullable(), updatedAt: z.string().nullable() })),
    }),
  },
  "acp.delete": { deadlineMs: MINUTE, args: z.object({ serverId: Id }), result: Deleted },
  "acp.list": { deadlineMs: HALF_MINUTE, args: Nothing, result: AcpServerList },
  "agents.list": { deadlineMs: MINUTE, args: z.object({ config: z.boolean(), noCache: z.boolean() }), result: AgentList },
  "agents.get": {
    deadlineMs: MINUTE,
    args: z.object({ agent: AgentId, config: z.boolean(), noCache: z.boolean() }),
    // The machine's platform rides along (absent from sidecars before it), for what the registry offers it.
    result: AgentInfo.extend({ platform: z.string().optional() }),
  },
  "agents.install": {
    deadlineMs: INSTALL_MS,
    args: z.object({
      agent: AgentId,
      request: InstallRequest,
      entry: RegistryAgent.optional().describe("the registry's entry, for an agent that is not built in"),
    }),
    result: InstallResult,
  },
  "processes.list": { deadlineMs: MINUTE, args: Nothing, result: ProcessList },
  "processes.get": { deadlineMs: MINUTE, args: z.object({ id: Id }), result: Process },
  "processes.spawn": { deadlineMs: MINUTE, args: SpawnRequest, result: Process },
  "processes.run": { deadlineMs: MINUTE, args: ProcessRunRequest, result: ProcessRunResponse },
  "processes.resize": { deadlineMs: HALF_MINUTE, args: z.object({ id: Id, cols: z.number().int(), rows: z.number().int() }), result: TerminalSize },
  "processes.config.get": { deadlineMs: MINUTE, args: Nothing, result: ProcessConfig },
  "processes.config.set": { deadlineMs: MINUTE, args: ProcessConfigUpdate, result: ProcessConfig },
  "processes.input": {
    deadlineMs: HALF_MINUTE,
    args: z.object({ id: Id, data: z.string(), encoding: z.enum(["utf8", "base64"]), eof: z.boolean() }),
    result: z.object({ bytesWritten: z.number() }),
  },
  "processes.signal": { deadlineMs: MINUTE, args: z.object({ id: Id, signal: z.enum(["SIGTERM", "SIGKILL"]) }), result: Process },
  "processes.delete": { deadlineMs: MINUTE, args: z.object({ id: Id }), result: Deleted },
  "processes.logs": {
    deadlineMs: MINUTE,
    args: z.object({
      id: Id,
      after: z.number().int().min(0),
      tail: z.number().int().min(0).optional(),
      stream: z.enum(["stdout", "stderr", "pty", "combined"]).optional(),
    }),
    result: ProcessLogs,
  },
  "skills.apply": { deadlineMs: APPLY_MS, args: SkillsApplyArgs, result: SkillsApplyResult },
  "mcp.apply": { deadlineMs: APPLY_MS, args: McpApplyArgs, result: McpApplyResult },
  "agents.apply": { deadlineMs: INSTALL_MS, args: AgentsApplyArgs, result: AgentsApplyResult },
  /** Per-directory entries (stored in `<directory>/.sandbox-agent/config/`, as sandbox-agent keeps them). */
  "mcp.entry.get": { deadlineMs: MINUTE, args: z.object({ directory: MachinePath, name: McpName }), result: McpServerConfig },
  "mcp.entry.put": {
    deadlineMs: MINUTE,
    args: z.object({ directory: MachinePath, name: McpName, config: McpServerConfig }),
    result: z.object({ path: z.string() }),
  },
  "mcp.entry.delete": { deadlineMs: MINUTE, args: z.object({ directory: MachinePath, name: McpName }), result: Deleted },
  "skills.entry.get": { deadlineMs: MINUTE, args: z.object({ directory: MachinePath, name: SkillName }), result: SkillsConfig },
  /** Answers with the apply of every entry of that directory into its agents' skills folders. */
  "skills.entry.put": { deadlineMs: APPLY_MS, args: z.object({ directory: MachinePath, name: SkillName, config: SkillsConfig }), result: SkillsApplyResult },
  "skills.entry.delete": {
    deadlineMs: APPLY_MS,
    args: z.object({ directory: MachinePath, name: SkillName }),
    result: SkillsApplyResult.extend({ deleted: z.boolean() }),
  },
  "fs.entries": {
    deadlineMs: MINUTE,
    args: z.object({ path: MachinePath.optional() }),
    result: z.object({ entries: z.array(FsEntry), truncated: z.boolean() }),
  },
  "fs.stat": { deadlineMs: MINUTE, args: z.object({ path: MachinePath }), result: FsStat },
  "fs.mkdir": { deadlineMs: MINUTE, args: z.object({ path: MachinePath }), result: FsActionResponse },
  "fs.delete": { deadlineMs: MINUTE, args: z.object({ path: MachinePath, recursive: z.boolean() }), result: FsActionResponse },
  "fs.move": { deadlineMs: MINUTE, args: z.object({ from: MachinePath, to: MachinePath, overwrite: z.boolean() }), result: FsMoveResponse },
  /** One piece of a file. `expect`: the size and mtime the first piece saw; a file changed since is refused (409), never spliced. */
  "fs.read": {
    deadlineMs: FILE_PIECE_MS,
    args: z.object({
      path: MachinePath,
      offset: z.number().int().min(0),
      length: z.number().int().min(1).max(LIMITS.fileChunkBytes),
      expect: z.object({ size: z.number().int(), mtimeMs: z.number() }).optional(),
    }),
    result: FileChunk,
  },
  /** Uploads are staged on the machine piece by piece (at `offset`, in order), then committed or unpacked whole. */
  "fs.upload": {
    deadlineMs: FILE_PIECE_MS,
    args: z.object({ upload: UploadId, offset: z.number().int().min(0), bytes: Bytes }),
    result: z.object({ received: z.number().int() }),
  },
  /** The upload's last piece (`offset`, `bytes`) comes with its commit: a file of one piece is one call. */
  "fs.commit": { deadlineMs: FILE_PIECE_MS, args: LastPiece.extend({ path: MachinePath }), result: FsWriteResponse },
  "fs.unpack": { deadlineMs: FILE_PIECE_MS, args: LastPiece.extend({ path: MachinePath }), result: FsUploadBatchResponse },
  "fs.abort": { deadlineMs: MINUTE, args: z.object({ upload: UploadId }), result: z.object({ aborted: z.boolean() }) },
} as const satisfies Record<string, { deadlineMs: number; args: z.ZodType; result: z.ZodType }>;

export type OpName = keyof typeof OPS;

/**
 * Operations that change nothing. Their answers are not remembered once sent (a file's piece is a
 * megabyte): a call re-sent after a reconnect simply runs again, which is harmless for these alone.
 * Every other operation's answer is remembered, so it is never run twice.
 */
export const READ_ONLY_OPS: ReadonlySet<OpName> = new Set<OpName>([
  "acp.list",
  "acp.discover",
  "agents.list",
  "agents.get",
  "processes.list",
  "processes.get",
  "processes.logs",
  "processes.config.get",
  "fs.entries",
  "fs.stat",
  "fs.read",
  "mcp.entry.get",
  "skills.entry.get",
]);
export type OpArgs<N extends OpName> = z.output<(typeof OPS)[N]["args"]>;
export type OpResult<N extends OpName> = z.output<(typeof OPS)[N]["result"]>;
const OpNameSchema = z.enum(Object.keys(OPS) as [OpName, ...OpName[]]);

// ---------- streams ----------

export const StreamRef = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("acp"), serverId: Id }),
  z.object({ kind: z.literal("logs"), processId: Id }),
]);
export type StreamRef = z.infer<typeof StreamRef>;

/** One streamed item: its sequence number in its stream and its JSON text (sent as-is, never re-encoded). */
export const StreamEvent = z.tuple([z.number().int(), z.string()]);
export type StreamEvent = [seq: number, json: string];

/** Why a stream ended: the ACP server exited or was deleted, the process exited, or it never existed. */
export const StreamEnd = z.object({
  code: z.enum(["exited", "deleted", "not_found"]),
  /** JSON text for a final SSE event (what exited and how). */
  json: z.string(),
});
export type StreamEnd = z.infer<typeof StreamEnd>;

/** Messages a reader will never get: dropped from a full buffer, or (`tooLarge`) one too big for a frame. */
export const StreamGap = z.object({ from: z.number().int(), to: z.number().int(), tooLarge: z.boolean().optional() });
export type StreamGap = z.infer<typeof StreamGap>;

/**
 * A process's output as bytes (an `out` frame, for a subscription with `output: "bytes"`): each piece's
 * sequence and length, in order; the bytes themselves are the binary frame's payload, one after another.
 */
export const OutputPiece = z.tuple([z.number().int(), z.number().int().min(0)]);
export type OutputPiece = [seq: number, byteLength: number];

// ---------- frames ----------

const ProblemInitSchema = z.object({
  code: z.enum(Object.keys(PROBLEMS) as [ProblemCode, ...ProblemCode[]]),
  detail: z.string(),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

export const SidecarFrame = z.discriminatedUnion("t", [
  z.object({
    t: z.literal("hello"),
    protocol: z.number().int(),
    machine: z.string(),
    sidecarVersion: z.string().max(64),
    platform: z.string().max(256),
    heartbeatMs: z.number().int().min(100).max(600_000).optional(),
    /** Random per sidecar process: a new one means the sidecar restarted, and calls meant for the old one fail. */
    bootId: z.string().max(64).optional(),
  }),
  z.object({ t: z.literal("res"), id: Id, ok: z.literal(true), value: z.unknown() }),
  z.object({ t: z.literal("err"), id: Id, problem: ProblemInitSchema }),
  z.object({ t: z.literal("ev"), sub: Id, events: z.array(StreamEvent), gap: StreamGap.optional() }),
  z.object({ t: z.literal("end"), sub: Id, end: StreamEnd }),
  /** A terminal's output as it was written (binary frame): for a `sub` with `output: "bytes"`, in place of `ev`. */
  z
    .object({ t: z.literal("out"), sub: Id, pieces: z.array(OutputPiece), gap: StreamGap.optional(), bytes: Bytes })
    .refine((f) => f.pieces.reduce((sum, [, length]) => sum + length, 0) === f.bytes.length, "the pieces' lengths do not add up to the bytes sent"),
  /** The sidecar could not read a frame the worker sent (a bug on one side): said, not dropped silently. */
  z.object({ t: z.literal("bad"), error: z.string().max(2000) }),
]);
export type SidecarFrame = z.infer<typeof SidecarFrame>;

/** What the worker says of a sidecar's version when it greets it. */
export const SidecarVersionAdvice = z.object({
  /** The sidecar version this worker was released with. */
  latest: z.string(),
  outdated: z.boolean(),
  /** How to upgrade, when outdated. */
  upgrade: z.string().nullable(),
});
export type SidecarVersionAdvice = z.infer<typeof SidecarVersionAdvice>;

export const WorkerFrame = z.discriminatedUnion("t", [
  z.object({ t: z.literal("welcome"), machine: z.string(), sidecar: SidecarVersionAdvice.optional() }),
  z.object({ t: z.literal("req"), id: Id, op: OpNameSchema, args: z.unknown() }),
  /** `recorder`: the machine's own session recorder, not a person reading (it keeps no agent from its idle stop). */
  /**
   * `output: "bytes"`: a terminal viewer, which wants a process's output as the bytes written (`out` frames),
   * not as log entries in JSON. A sidecar that does not know it sends `ev` frames, which viewers read too.
   */
  z.object({
    t: z.literal("sub"),
    sub: Id,
    stream: StreamRef,
    after: z.number().int().min(0),
    recorder: z.boolean().optional(),
    output: z.literal("bytes").optional(),
  }),
  z.object({ t: z.literal("unsub"), sub: Id }),
  /** The worker gave up on a call (its deadline passed): the sidecar stops what it started and forgets the id. */
  z.object({ t: z.literal("cancel"), id: Id }),
  z.object({ t: z.literal("bye"), reason: z.string() }),
  /** The worker could not read a frame the sidecar sent: said, not dropped silently. */
  z.object({ t: z.literal("bad"), error: z.string().max(2000) }),
]);
export type WorkerFrame = z.infer<typeof WorkerFrame>;

export type Parsed<F> = { ok: true; frame: F } | { ok: false; error: string };

/** What a WebSocket hands over: text, or the bytes of a binary frame. */
export type FrameMessage = string | ArrayBuffer | Uint8Array;

/** A binary frame starts with the length of its JSON control frame (4 bytes, big-endian); its bytes follow that. */
const HEADER_LENGTH_BYTES = 4;
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** Where a frame's bytes would be: a call's arguments, an answer's value, an `out` frame itself. */
function holderOf(frame: { t?: unknown; args?: unknown; value?: unknown }): object | null {
  const holder = frame.t === "req" ? frame.args : frame.t === "res" ? frame.value : frame.t === "out" ? frame : null;
  return typeof holder === "object" && holder !== null && !Array.isArray(holder) ? holder : null;
}

/**
 * A frame as the tunnel carries it: JSON text, or, for a frame with bytes (`args.bytes`, `value.bytes`),
 * one binary frame of the control frame's JSON (without them) followed by the bytes. One copy, no base64.
 */
export function encodeFrame(frame: WorkerFrame | SidecarFrame): string | Uint8Array {
  const holder = holderOf(frame);
  const bytes = holder && "bytes" in holder && holder.bytes instanceof Uint8Array ? holder.bytes : null;
  if (!bytes) return JSON.stringify(frame);
  // The control frame without its bytes (a replacer would not do: a Node Buffer turns itself into JSON first).
  const control = holder === frame ? { ...frame, bytes: undefined } : { ...frame, [frame.t === "req" ? "args" : "value"]: { ...holder, bytes: undefined } };
  const header = utf8Encoder.encode(JSON.stringify(control));
  const out = new Uint8Array(HEADER_LENGTH_BYTES + header.length + bytes.length);
  new DataView(out.buffer).setUint32(0, header.length);
  out.set(header, HEADER_LENGTH_BYTES);
  out.set(bytes, HEADER_LENGTH_BYTES + header.length);
  return out;
}

/** A message's JSON, with a binary frame's bytes put back where they were taken from. */
function decodeFrame(message: FrameMessage): { ok: true; value: unknown } | { ok: false; error: string } {
  if (typeof message === "string") {
    try {
      return { ok: true, value: JSON.parse(message) };
    } catch {
      return { ok: false, error: `not JSON: ${message.slice(0, 80)}` };
    }
  }
  const view = message instanceof Uint8Array ? message : new Uint8Array(message);
  const headerLength = view.length >= HEADER_LENGTH_BYTES ? new DataView(view.buffer, view.byteOffset, view.length).getUint32(0) : -1;
  if (headerLength < 0 || HEADER_LENGTH_BYTES + headerLength > view.length)
    return { ok: false, error: `a binary frame of ${view.length} bytes without its header` };
  let value: unknown;
  try {
    value = JSON.parse(utf8Decoder.decode(view.subarray(HEADER_LENGTH_BYTES, HEADER_LENGTH_BYTES + headerLength)));
  } catch {
    return { ok: false, error: "a binary frame whose header is not JSON" };
  }
  const frame = typeof value === "object" && value !== null ? (value as { t?: unknown; args?: unknown; value?: unknown }) : null;
  const holder = frame ? holderOf(frame) : null;
  if (!holder) {
    return { ok: false, error: `a binary frame ${JSON.stringify(frame?.t ?? null)} with no place for its bytes` };
  }
  (holder as { bytes?: Uint8Array }).bytes = view.subarray(HEADER_LENGTH_BYTES + headerLength);
  return { ok: true, value };
}

function parseWith<F>(schema: z.ZodType<F>, message: FrameMessage): Parsed<F> {
  const decoded = decodeFrame(message);
  if (!decoded.ok) return decoded;
  const value = decoded.value;
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, frame: parsed.data };
  return { ok: false, error: `frame ${JSON.stringify((value as { t?: unknown } | null)?.t ?? null)} refused: ${issuesText(parsed.error, "(frame)")}` };
}

/** A frame from the sidecar, parsed; what does not parse is named, for the log and the answer. */
export function parseSidecarFrame(message: FrameMessage): Parsed<SidecarFrame> {
  return parseWith(SidecarFrame, message);
}

export function parseWorkerFrame(message: FrameMessage): Parsed<WorkerFrame> {
  return parseWith(WorkerFrame, message);
}

/** An operation's arguments, parsed against its schema (the sidecar does this before any handler runs). */
export function parseOpArgs<N extends OpName>(op: N, args: unknown): { ok: true; args: OpArgs<N> } | { ok: false; error: string } {
  const parsed = OPS[op].args.safeParse(args);
  return parsed.success ? { ok: true, args: parsed.data as OpArgs<N> } : { ok: false, error: issuesText(parsed.error, "(args)") };
}

/** An operation's result, parsed against its schema (the worker does this before answering anyone). */
export function parseOpResult<N extends OpName>(op: N, value: unknown): { ok: true; value: OpResult<N> } | { ok: false; error: string } {
  const parsed = OPS[op].result.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data as OpResult<N> } : { ok: false, error: issuesText(parsed.error, "(result)") };
}

/** The first few issues of a refusal, each with where it is: enough to see which side is out of date. */
function issuesText(error: z.ZodError, root: string): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || root}: ${i.message}`)
    .join("; ");
}
