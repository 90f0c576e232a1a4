/**
 * The tunnel between a machine's Durable Object (the worker side) and its sidecar.
 *
 * One WebSocket. Control frames are JSON text; a frame that carries bytes (a piece of a file, a terminal's
 * output, a batch of stream events packed by `packEvents`) is one binary frame: its control frame as JSON,
 * then the bytes as they are (`encodeFrame`), never base64 or escaped text in JSON. Three kinds of traffic:
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
import { MachineSandbox } from "./sandbox";
import { PROBLEMS, type ProblemCode } from "./problems";
import { OpNameSchema } from "./ops";
import { Bytes, Id, issuesText } from "./ops/define";
import { PreviewClose, PreviewCredit, PreviewData, PreviewHead, PreviewOffer, PreviewOpen } from "./preview";
import { AgentId } from "./values";
import { cutEvents, packedBatchOf } from "./packed-events";
import { isJsonObject } from "./json";

export const TUNNEL_PATH_PREFIX = "/_tunnel/";

/** The heartbeat: exactly these texts, so that the runtime can answer without waking the object. */
export const PING_FRAME = '{"t":"ping"}';
export const PONG_FRAME = '{"t":"pong"}';

/**
 * Version of this frame protocol; a sidecar speaking another one is refused with a clear message.
 * 2: file pieces travel in binary frames (1 sent them as base64 in JSON).
 */
export const TUNNEL_PROTOCOL_VERSION = 2;

/** The most pieces of an upload a worker has on their way at once, whatever a sidecar's hello offers. */
export const UPLOAD_WINDOW_MAX = 2;

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

/** A frame of pieces (`out`, a packed `ev`): its pieces' lengths must add up to the bytes it carries. */
const piecesAddUp = [
  (f: { pieces: OutputPiece[]; bytes: Uint8Array }) => f.pieces.reduce((sum, [, length]) => sum + length, 0) === f.bytes.length,
  "the pieces' lengths do not add up to the bytes sent",
] as const;

/** Items in sequence as one run of bytes, each with its sequence and length: how `out` and packed `ev` frames carry them. */
export function joinPieces(items: readonly (readonly [seq: number, bytes: Uint8Array])[]): { pieces: OutputPiece[]; bytes: Uint8Array<ArrayBuffer> } {
  const bytes = new Uint8Array(items.reduce((sum, [, item]) => sum + item.length, 0));
  let at = 0;
  for (const [, item] of items) {
    bytes.set(item, at);
    at += item.length;
  }
  return { pieces: items.map(([seq, item]) => [seq, item.length]), bytes };
}

// ---------- frames ----------

const ProblemInitSchema = z.object({
  code: z.enum(Object.keys(PROBLEMS) as [ProblemCode, ...ProblemCode[]]),
  detail: z.string(),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

/** A preview stream's end, its problem one of ours. */
const PreviewCloseFrame = PreviewClose.extend({ problem: ProblemInitSchema.optional() });

/** The other subscriptions a batch is for (each asked for it with `shared`), besides its `sub`. */
const SharedWith = z.array(Id).max(1000).optional();

/** What every `ev` batch carries besides its events, however they cross (as JSON, or packed: `packEvents`). */
const EventsHeader = z.object({ t: z.literal("ev"), sub: Id, also: SharedWith, gap: StreamGap.optional() });

/** Every subscription a batch (`ev`, `out`) is for. */
export function subsOf(frame: { sub: string; also?: string[] | undefined }): string[] {
  return frame.also ? [frame.sub, ...frame.also] : [frame.sub];
}

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
    /**
     * How many pieces of an upload (`fs.upload`) it takes before the first is stored: it writes them in
     * order. Without it, one at a time (a sidecar that checks each piece against what it has written).
     */
    uploadWindow: z.number().int().min(1).max(64).optional(),
    /** It serves previews of the machine's ports (preview.ts); without it, a preview is refused as "upgrade the sidecar". */
    preview: PreviewOffer.optional(),
    /** What its agents are enclosed in and what its owner set (docs/architecture.md, "Sandboxes"); without it, nothing said. */
    sandbox: MachineSandbox.optional(),
  }),
  z.object({ t: z.literal("res"), id: Id, ok: z.literal(true), value: z.unknown() }),
  z.object({ t: z.literal("err"), id: Id, problem: ProblemInitSchema }),
  EventsHeader.extend({ events: z.array(StreamEvent) }),
  z.object({ t: z.literal("end"), sub: Id, end: StreamEnd }),
  /** A terminal's output as it was written (binary frame): for a `sub` with `output: "bytes"`, in place of `ev`. */
  z.object({ t: z.literal("out"), sub: Id, also: SharedWith, pieces: z.array(OutputPiece), gap: StreamGap.optional(), bytes: Bytes }).refine(...piecesAddUp),
  /** The sidecar could not read a frame the worker sent (a bug on one side): said, not dropped silently. */
  z.object({ t: z.literal("bad"), error: z.string().max(2000) }),
  /** What listens on the machine changed (sent to a worker whose welcome asked for it): the ports are read with `ports.list`. */
  z.object({ t: z.literal("ports") }),
  /** An agent's own login flow asks a person something, or ended: the login is read with `logins.get` (docs/architecture.md, "Logins"). */
  z.object({ t: z.literal("login"), agent: AgentId }),
  // A proxied request's or WebSocket's stream (preview.ts).
  PreviewHead,
  PreviewData,
  PreviewCredit,
  PreviewCloseFrame,
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
  z.object({
    t: z.literal("welcome"),
    machine: z.string(),
    sidecar: SidecarVersionAdvice.optional(),
    /** The worker reads `ports` frames: the sidecar says when what listens on the machine changes. */
    ports: z.boolean().optional(),
  }),
  z.object({ t: z.literal("req"), id: Id, op: OpNameSchema, args: z.unknown() }),
  /**
   * `recorder`: the machine's own session recorder, not a person reading (it keeps no agent from its idle stop).
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
    /** The worker reads `ev` batches packed (`packEvents`): a sidecar that does not know it sends them as JSON. */
    packed: z.boolean().optional(),
    /**
     * The worker reads a batch addressed to several subscriptions at once (`also`): subscriptions of one
     * stream at the same point (the session recorder and a person reading the same agent) then cost the
     * sidecar one frame per batch, and the machine's object one parse. A sidecar that does not know it
     * sends each its own.
     */
    shared: z.boolean().optional(),
  }),
  z.object({ t: z.literal("unsub"), sub: Id }),
  /** The worker gave up on a call (its deadline passed): the sidecar stops what it started and forgets the id. */
  z.object({ t: z.literal("cancel"), id: Id }),
  z.object({ t: z.literal("bye"), reason: z.string() }),
  /** The worker could not read a frame the sidecar sent: said, not dropped silently. */
  z.object({ t: z.literal("bad"), error: z.string().max(2000) }),
  // A proxied request's or WebSocket's stream (preview.ts), sent only to a sidecar whose hello offers previews.
  PreviewOpen,
  PreviewData,
  PreviewCredit,
  PreviewCloseFrame,
]);
export type WorkerFrame = z.infer<typeof WorkerFrame>;

export type Parsed<F> = { ok: true; frame: F } | { ok: false; error: string };

/** What a WebSocket hands over: text, or the bytes of a binary frame. */
export type FrameMessage = string | ArrayBuffer | Uint8Array;

/** A binary frame starts with the length of its JSON control frame (4 bytes, big-endian); its bytes follow that. */
const HEADER_LENGTH_BYTES = 4;
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** Where a frame's bytes would be: a call's arguments, an answer's value, an `out` or packed `ev` frame itself. */
function holderOf(frame: { t?: unknown; args?: unknown; value?: unknown }): object | null {
  const holder =
    frame.t === "req"
      ? frame.args
      : frame.t === "res"
        ? frame.value
        : frame.t === "out" || frame.t === "ev" || frame.t === "pd" || frame.t === "ph"
          ? frame
          : null;
  return typeof holder === "object" && holder !== null && !Array.isArray(holder) ? holder : null;
}

/** Buffers whose memory before a view's bytes is free for a frame's header (`withHeadroom`). */
const headroom = new WeakSet<ArrayBufferLike>();

/**
 * Room a one-piece upload's body is read after (src/routes/files.ts), for its frame's header: the call's
 * id, the upload's id and a path of up to 4,096 characters, as UTF-8.
 */
export const FRAME_HEADROOM = 16 * 1024;

/**
 * `bytes` marked for `encodeFrame` when they are exactly what a one-piece body read after FRAME_HEADROOM
 * free bytes is (a buffer of the room and the bytes, nothing after them); anything else is left as it is
 * and copied when framed.
 */
export function withBodyHeadroom<B extends Uint8Array>(bytes: B): B {
  return bytes.byteOffset === FRAME_HEADROOM && bytes.buffer.byteLength === FRAME_HEADROOM + bytes.byteLength ? withHeadroom(bytes) : bytes;
}

/**
 * Lets `encodeFrame` write a frame's header into the memory before `bytes` in their buffer, and send the
 * bytes where they are instead of copying them after it (a 1 MiB write's body: one copy of it less). Only
 * for a buffer its caller owns whole, which nothing else reads before `bytes`.
 */
export function withHeadroom<B extends Uint8Array>(bytes: B): B {
  headroom.add(bytes.buffer);
  return bytes;
}

/**
 * A frame as the tunnel carries it: JSON text, or, for a frame with bytes (`args.bytes`, `value.bytes`),
 * one binary frame of the control frame's JSON (without them) followed by the bytes. One copy, no base64
 * (none when the bytes have room for the header before them: `withHeadroom`).
 */
export function encodeFrame(frame: WorkerFrame | SidecarFrame | PackedEvents): string | Uint8Array<ArrayBuffer> {
  const holder = holderOf(frame);
  const bytes = holder && "bytes" in holder && holder.bytes instanceof Uint8Array ? holder.bytes : null;
  if (!bytes) return JSON.stringify(frame);
  // The control frame without its bytes (a replacer would not do: a Node Buffer turns itself into JSON first).
  const control = holder === frame ? { ...frame, bytes: undefined } : { ...frame, [frame.t === "req" ? "args" : "value"]: { ...holder, bytes: undefined } };
  const header = utf8Encoder.encode(JSON.stringify(control));
  const start = bytes.byteOffset - HEADER_LENGTH_BYTES - header.length;
  if (start >= 0 && bytes.buffer instanceof ArrayBuffer && headroom.has(bytes.buffer)) {
    new DataView(bytes.buffer, start, HEADER_LENGTH_BYTES).setUint32(0, header.length);
    new Uint8Array(bytes.buffer, start + HEADER_LENGTH_BYTES, header.length).set(header);
    return new Uint8Array(bytes.buffer, start, HEADER_LENGTH_BYTES + header.length + bytes.length);
  }
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
  return decoded.ok ? parseDecoded(schema, decoded.value) : decoded;
}

function parseDecoded<F>(schema: z.ZodType<F>, value: unknown): Parsed<F> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, frame: parsed.data };
  return { ok: false, error: `frame ${JSON.stringify((value as { t?: unknown } | null)?.t ?? null)} refused: ${issuesText(parsed.error, "(frame)")}` };
}

/**
 * An `ev` batch packed for the tunnel: each event's sequence and byte length, and their JSON texts one
 * after another as the binary frame's payload. The texts cross as they are (no escaping into the frame's
 * own JSON and back); the receiving end parses the frame with its pieces and cuts the events out of the bytes.
 */
export interface PackedEvents {
  t: "ev";
  sub: string;
  also?: string[];
  pieces: OutputPiece[];
  gap?: StreamGap;
  bytes: Uint8Array;
}

/** A batch packed for subscription `sub` and, when given, the others in `also`. */
export function packEvents(sub: string, events: StreamEvent[], gap?: StreamGap, also?: string[]): PackedEvents {
  const { pieces, bytes } = joinPieces(events.map(([seq, json]) => [seq, utf8Encoder.encode(json)]));
  return { t: "ev", sub, ...(also?.length ? { also } : {}), pieces, ...(gap ? { gap } : {}), bytes };
}

/** A packed `ev` frame as `decodeFrame` gives it back: its control frame, with its bytes in place. */
export const PackedEventsFrame = EventsHeader.extend({ pieces: z.array(OutputPiece), bytes: Bytes }).refine(...piecesAddUp);

function isPacked(value: unknown): boolean {
  return typeof value === "object" && value !== null && "t" in value && value.t === "ev" && "bytes" in value;
}

/**
 * A packed `ev` batch, parsed, then cut into its events by the parsed lengths: each event is checked once,
 * as its piece, instead of again as an event once rebuilt (a stream's every update crosses here).
 */
function unpackEvents(value: unknown): Parsed<Extract<SidecarFrame, { t: "ev" }>> {
  // The light check first (packed-events.ts); the schema decides what it does not accept, and names why.
  const light = packedBatchOf(value);
  const packed = light ? { success: true as const, data: light } : PackedEventsFrame.safeParse(value);
  if (!packed.success) return { ok: false, error: `frame "ev" refused: ${issuesText(packed.error, "(frame)")}` };
  const { pieces, bytes, ...frame } = packed.data;
  return { ok: true, frame: { ...frame, events: cutEvents(pieces, bytes) } };
}

/** The bounds of a call's id, as its schema (`Id`) sets them. */
const ID_MIN = Id.minLength ?? 0;
const ID_MAX = Id.maxLength ?? Number.POSITIVE_INFINITY;

/**
 * A call's answer as the sidecar sends it (`encodeFrame` of `{ t, id, ok, value }`), checked by hand: exactly
 * those keys in that order (the schema's, so what it gives back is key for key the schema's), an id of
 * 1–256 characters, `ok` true and a value of any kind but undefined, which the operation's result schema then checks.
 * Every other frame, and an answer that fails this, goes through the schema, which names what is wrong.
 * It never accepts what the schema refuses (light-checks.test.ts holds the two to the same answers).
 */
export function commonAnswerFrame(value: unknown): Extract<SidecarFrame, { t: "res" }> | null {
  if (!isJsonObject(value)) return null;
  const frame = value;
  if (frame.t !== "res" || frame.ok !== true || typeof frame.id !== "string" || frame.id.length < ID_MIN || frame.id.length > ID_MAX) return null;
  const keys = Object.keys(frame);
  if (keys.length !== 4 || keys[0] !== "t" || keys[1] !== "id" || keys[2] !== "ok" || keys[3] !== "value" || frame.value === undefined) return null;
  return frame as Extract<SidecarFrame, { t: "res" }>;
}

/** A frame from the sidecar, parsed; what does not parse is named, for the log and the answer. */
export function parseSidecarFrame(message: FrameMessage): Parsed<SidecarFrame> {
  const decoded = decodeFrame(message);
  if (!decoded.ok) return decoded;
  const answer = commonAnswerFrame(decoded.value);
  if (answer) return { ok: true, frame: answer };
  return isPacked(decoded.value) ? unpackEvents(decoded.value) : parseDecoded(SidecarFrame, decoded.value);
}

export function parseWorkerFrame(message: FrameMessage): Parsed<WorkerFrame> {
  return parseWith(WorkerFrame, message);
}
