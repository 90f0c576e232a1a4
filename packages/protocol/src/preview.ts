/**
 * Previews: a machine's local ports through the hosted URL (docs/architecture.md, "Previews" and "Streams in
 * the tunnel"). What both ends share: the frames of a proxied HTTP request or WebSocket, their flow control,
 * the listening ports a machine reports, and the DNS label a machine's previews are served under.
 *
 * One proxied request or WebSocket is one stream with an id the worker picks (`sid`):
 *   worker → sidecar  `po` open (method, path, headers; `ws` for an upgrade), `pd` request body pieces
 *                     or WebSocket messages, `pw` credit for response bytes, `px` abort or close.
 *   sidecar → worker  `ph` the response's head (or the upgrade accepted), `pd` response pieces or
 *                     messages, `pw` credit for request bytes, `px` the end (a problem when it failed
 *                     before its head: nothing listening, a port not allowed).
 * Bytes travel in binary frames (`pd`), never in JSON. Each side sends body bytes only while it holds
 * credit from the other (`PREVIEW_WINDOW_BYTES` to start, `pw` as the reader takes them), so a slow reader
 * or a huge body holds at most one window in the tunnel and never stalls the calls beside it.
 */
import { z } from "zod";
import { Bytes, Id } from "./ops/define";
import { resource } from "./resource";

/** The most bytes one `pd` frame carries. */
export const PREVIEW_PIECE_BYTES = 256 * 1024;
/** Body bytes a side may send before the other's credit: the window each direction of a stream starts with. */
export const PREVIEW_WINDOW_BYTES = 2 * 1024 * 1024;
/** A proxied WebSocket message larger than this closes the socket (1009): messages are not flow-controlled. */
export const PREVIEW_MESSAGE_MAX_BYTES = 1024 * 1024;
/** An HTTP stream with no bytes either way for this long is ended by the sidecar. */
export const PREVIEW_HTTP_IDLE_MS = 5 * 60_000;
/** A WebSocket with no message either way for this long is closed by the sidecar (a hot-reload socket idles for long). */
export const PREVIEW_SOCKET_IDLE_MS = 60 * 60_000;

const Port = z.number().int().min(1).max(65_535);
const Headers = z.array(z.tuple([z.string().max(256), z.string().max(16_384)])).max(256);
const ProblemShape = z.object({ code: z.string(), detail: z.string(), extensions: z.record(z.string(), z.unknown()).optional() });

/** Worker → sidecar: open a stream to `127.0.0.1:{port}`. */
export const PreviewOpen = z.object({
  t: z.literal("po"),
  sid: Id,
  port: Port,
  method: z.string().min(1).max(32),
  /** The path and query as the app sees it (the preview's prefix taken off). */
  path: z.string().startsWith("/").max(16_384),
  headers: Headers,
  /** Whether a request body follows (`pd` frames, the last with `fin`). */
  body: z.boolean(),
  /** A WebSocket upgrade, with the subprotocols the browser offered. */
  ws: z.array(z.string().max(256)).max(32).optional(),
});
export type PreviewOpen = z.infer<typeof PreviewOpen>;

/**
 * Sidecar → worker: the app's response head, or its WebSocket accepted (status 101, `protocol` chosen). The
 * body's first bytes may travel with it (a binary frame), and `fin` when that was all of it.
 */
export const PreviewHead = z.object({
  t: z.literal("ph"),
  sid: Id,
  status: z.number().int().min(100).max(599),
  headers: Headers,
  protocol: z.string().max(256).optional(),
  bytes: Bytes.optional(),
  fin: z.boolean().optional(),
});
export type PreviewHead = z.infer<typeof PreviewHead>;

/** Either way: body bytes (binary frame), or one WebSocket message (`text` when it was a text message); `fin` ends a body. */
export const PreviewData = z.object({ t: z.literal("pd"), sid: Id, fin: z.boolean().optional(), text: z.boolean().optional(), bytes: Bytes });
export type PreviewData = z.infer<typeof PreviewData>;

/** Either way: the reader took `n` more bytes; the other side may send that many more. */
export const PreviewCredit = z.object({
  t: z.literal("pw"),
  sid: Id,
  n: z
    .number()
    .int()
    .min(1)
    .max(1 << 30),
});
export type PreviewCredit = z.infer<typeof PreviewCredit>;

/** Either way: the stream is over. A WebSocket's close code and reason; a problem when it failed. */
export const PreviewClose = z.object({
  t: z.literal("px"),
  sid: Id,
  code: z.number().int().min(1000).max(4999).optional(),
  reason: z.string().max(123).optional(),
  problem: ProblemShape.optional(),
});
export type PreviewClose = z.infer<typeof PreviewClose>;

export type PreviewFrame = PreviewOpen | PreviewHead | PreviewData | PreviewCredit | PreviewClose;

/** What a sidecar says of previews in its hello: that it serves them, and the ports its owner allowed. */
export const PreviewOffer = z.object({ expose: z.string().max(1000) });
export type PreviewOffer = z.infer<typeof PreviewOffer>;

// ---------- the machine's listening ports ----------

/** Who owns a listening socket, when it is one of the runtime's own processes. */
export const PortOwner = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("acp"), serverId: Id, processId: Id }),
  z.object({ kind: z.literal("process"), processId: Id }),
  z.object({ kind: z.literal("sidecar") }),
]);
export type PortOwner = z.infer<typeof PortOwner>;

export const ListeningPort = resource("ListeningPort", {
  port: Port,
  /** Where it listens: 127.0.0.1, ::1, 0.0.0.0, :: or another address of the machine. */
  addresses: z.array(z.string().max(64)).max(16),
  pid: z.number().int().nullable(),
  /**
   * The owning process's command line, shortened, for the runtime's processes and their children; the
   * program's name alone for any other (a command line may carry a secret); null when the machine does
   * not say (another user's process).
   */
  command: z.string().max(512).nullable(),
  /** One of the runtime's processes, or a child of one (an agent's dev server). */
  owner: PortOwner.nullable(),
  /** The machine's owner allowed previews of it (`--expose-ports`). */
  allowed: z.boolean(),
});
export type ListeningPort = z.infer<typeof ListeningPort>;

export const PortList = resource("PortList", {
  ports: z.array(ListeningPort),
  /** The sidecar's `--expose-ports` as given ("" when none: no port is served). */
  expose: z.string(),
});
export type PortList = z.infer<typeof PortList>;

// ---------- where a preview is served ----------

/** A machine id served as its own DNS label: lowercase letters and digits, inner hyphens, short enough for `{port}--`. */
const PLAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$/;
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/**
 * The DNS label of a machine's previews (`{port}--{label}.{PREVIEW_DOMAIN}`): the machine id itself when it
 * is a valid lowercase DNS label of at most 50 characters; otherwise `m-` and the first 26 base32 characters
 * (130 bits) of its id's SHA-256, so ids with `.`, `_`, capitals or 128 characters get a stable label that
 * fits the 63 characters of one DNS label with the port in front.
 */
export async function previewLabel(machine: string): Promise<string> {
  if (PLAIN_LABEL.test(machine) && !machine.startsWith("m-")) return machine;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(machine)));
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < 26) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `m-${out}`;
}

/** A preview host's first label, `{port}--{label}`, read back; null when it is not one. */
export function parsePreviewLabel(first: string): { port: number; label: string } | null {
  const match = /^([0-9]{1,5})--([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)$/.exec(first.toLowerCase());
  if (!match) return null;
  const port = Number(match[1]);
  return port >= 1 && port <= 65_535 ? { port, label: match[2] ?? "" } : null;
}
