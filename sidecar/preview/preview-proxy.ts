/**
 * The sidecar's end of previews (docs/architecture.md, "Previews"): each `po` the worker sends becomes a
 * request (or a WebSocket) to the app on `localhost:{port}`, its bytes flowing back in `pd` frames within
 * the worker's credit (`pw`), so a slow browser pauses the app's response here instead of filling the
 * tunnel. A port its owner did not expose is refused before anything connects.
 */
import http from "node:http";
import type { Socket } from "node:net";
import WebSocket from "ws";
import type { SidecarFrame } from "@agent-runtime/protocol/frames";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import {
  PREVIEW_HTTP_IDLE_MS,
  PREVIEW_MESSAGE_MAX_BYTES,
  PREVIEW_PIECE_BYTES,
  PREVIEW_SOCKET_IDLE_MS,
  PREVIEW_WINDOW_BYTES,
  type PreviewFrame,
  type PreviewHead,
  type PreviewOpen,
} from "@agent-runtime/protocol/preview";
import { errnoCode, errorText, logger } from "../log";
import type { ExposedPorts } from "./exposed-ports";

const log = logger("preview");

/** Apps listen on IPv4 loopback, or on IPv6 only (a dev server bound to `localhost` on a newer Node): both are tried. */
const LOOPBACKS = ["127.0.0.1", "::1"] as const;

/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"]);

type Send = (frame: SidecarFrame) => void;
type Inside = (port: number) => Promise<(() => Socket) | null>;

/** A Buffer Node read from a socket, as the frame's bytes (its memory is never shared between threads). */
function bytesOf(buffer: Buffer): Uint8Array<ArrayBuffer> {
  return new Uint8Array(buffer.buffer as ArrayBuffer, buffer.byteOffset, buffer.byteLength);
}

interface Stream {
  fromWorker(frame: PreviewFrame): void;
  abort(): void;
}

export interface PreviewOptions {
  /** Idle limits (tests shorten them). */
  httpIdleMs?: number;
  socketIdleMs?: number;
  /**
   * Nothing on the machine's loopback: a sandbox whose agent listens on the port on its own loopback, as a
   * connection to it (sidecar/sandbox/ingress.ts); null when none does.
   */
  inside?: (port: number) => Promise<(() => Socket) | null>;
}

export class PreviewProxy {
  private readonly streams = new Map<string, Stream>();

  constructor(
    readonly exposed: ExposedPorts,
    private readonly send: Send,
    private readonly options: PreviewOptions = {},
  ) {}

  /** A preview frame from the worker. */
  frame(frame: PreviewFrame): void {
    if (frame.t === "po") this.open(frame);
    else this.streams.get(frame.sid)?.fromWorker(frame);
  }

  /** The tunnel dropped: every preview ends (the worker ends its side too). */
  closeAll(): void {
    for (const stream of this.streams.values()) stream.abort();
    this.streams.clear();
  }

  /** Streams open now. */
  get size(): number {
    return this.streams.size;
  }

  private open(frame: PreviewOpen): void {
    if (this.streams.has(frame.sid)) return;
    if (!this.exposed.allows(frame.port)) {
      this.send({ t: "px", sid: frame.sid, problem: { code: "port_not_allowed", detail: this.exposed.refusal(frame.port) } });
      return;
    }
    const done = () => this.streams.delete(frame.sid);
    const inside = this.options.inside ?? (async () => null);
    const stream = frame.ws
      ? new SocketStream(frame, this.send, done, this.options.socketIdleMs ?? PREVIEW_SOCKET_IDLE_MS, inside)
      : new HttpStream(frame, this.send, done, this.options.httpIdleMs ?? PREVIEW_HTTP_IDLE_MS, inside);
    this.streams.set(frame.sid, stream);
  }
}

function unreachable(port: number, err: unknown): ProblemInit {
  const refused = errnoCode(err) === "ECONNREFUSED";
  return refused
    ? { code: "port_unreachable", detail: `nothing is listening on port ${port} of this machine` }
    : { code: "stream_error", detail: `the app on port ${port} failed: ${errorText(err)}` };
}

function forwardedHeaders(open: PreviewOpen): string[] {
  const flat: string[] = ["host", `localhost:${open.port}`];
  for (const [name, value] of open.headers) if (!HOP_BY_HOP.has(name.toLowerCase())) flat.push(name, value);
  return flat;
}

/** Restarts a timer on every byte; when it rings the stream has idled too long. */
class IdleTimer {
  private timer: NodeJS.Timeout | null = null;
  constructor(
    private readonly ms: number,
    private readonly ring: () => void,
  ) {
    this.touch();
  }
  touch(): void {
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(this.ring, this.ms).unref();
  }
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}

/**
 * What both kinds of proxied stream share: the opening frame, the way back to the worker, the proxy's
 * bookkeeping when it ends, a sandbox's way in, and the idle timer each byte restarts. A subclass
 * connects in its own constructor, once its fields are set.
 */
abstract class ProxiedStream implements Stream {
  protected readonly idle: IdleTimer;

  constructor(
    protected readonly open: PreviewOpen,
    protected readonly send: Send,
    protected readonly done: () => void,
    idleMs: number,
    protected readonly inside: Inside,
  ) {
    this.idle = new IdleTimer(idleMs, () => this.idled(idleMs));
  }

  abstract fromWorker(frame: PreviewFrame): void;
  abstract abort(): void;
  /** The stream sent no bytes either way for `idleMs`. */
  protected abstract idled(idleMs: number): void;
}

/** One proxied HTTP request: the worker's body in, the app's response out, each within the other side's credit. */
class HttpStream extends ProxiedStream {
  private req: http.ClientRequest | null = null;
  private res: http.IncomingMessage | null = null;
  /** Response bytes we may still send before the worker's next credit. */
  private credit = PREVIEW_WINDOW_BYTES;
  /** Request bytes written to the app and not yet credited back. */
  private written = 0;
  private finished = false;

  constructor(...args: ConstructorParameters<typeof ProxiedStream>) {
    super(...args);
    this.connect(0);
  }

  protected idled(idleMs: number): void {
    this.fail({ code: "timeout", detail: `the preview of port ${this.open.port} sent no bytes either way for ${Math.round(idleMs / 1000)} s` });
  }

  private connect(attempt: number, via?: () => Socket): void {
    const { open } = this;
    let connected = false;
    const req = http.request({
      ...(via ? { createConnection: via } : { host: LOOPBACKS[attempt] }),
      port: open.port,
      method: open.method,
      path: open.path,
      headers: forwardedHeaders(open),
      setHost: false,
    });
    this.req = req;
    req.on("socket", (socket) => {
      const ready = () => {
        connected = true;
        // Body bytes come only once the app is there: a refused connection is retried with nothing lost.
        if (open.body) this.send({ t: "pw", sid: open.sid, n: PREVIEW_WINDOW_BYTES });
        else req.end();
      };
      if (socket.connecting) socket.once("connect", ready);
      else ready();
    });
    req.on("error", (err) => {
      if (this.finished) return;
      const refused = !connected && errnoCode(err) === "ECONNREFUSED";
      if (refused && !via && attempt + 1 < LOOPBACKS.length) return this.connect(attempt + 1);
      if (refused && !via) return void this.tryInside(err);
      this.fail(unreachable(open.port, err));
    });
    req.on("response", (res) => this.respond(res));
  }

  /** Nothing on the machine's loopback: a sandboxed agent's app, if one listens on the port. */
  private async tryInside(err: unknown): Promise<void> {
    const via = await this.inside(this.open.port).catch(() => null);
    if (this.finished) return;
    if (via) this.connect(0, via);
    else this.fail(unreachable(this.open.port, err));
  }

  /**
   * The app's response. Its head waits for the bytes that came with it (until the event loop's next turn,
   * at most a piece): a small answer, a module of a dev server, crosses as one frame instead of three.
   */
  private respond(res: http.IncomingMessage): void {
    this.res = res;
    const headers: [string, string][] = [];
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
      const name = res.rawHeaders[i] ?? "";
      if (!HOP_BY_HOP.has(name.toLowerCase())) headers.push([name, res.rawHeaders[i + 1] ?? ""]);
    }
    const head: PreviewHead = { t: "ph", sid: this.open.sid, status: res.statusCode ?? 502, headers };
    let withHead: Buffer[] | null = [];
    let headBytes = 0;
    const sendHead = (fin: boolean) => {
      if (!withHead) return;
      const bytes = withHead.length ? bytesOf(Buffer.concat(withHead)) : null;
      withHead = null;
      this.send({ ...head, ...(bytes ? { bytes } : {}), ...(fin ? { fin: true } : {}) });
    };
    setImmediate(() => sendHead(false));
    res.on("data", (chunk: Buffer) => {
      this.idle.touch();
      this.credit -= chunk.length;
      if (withHead && headBytes + chunk.length <= PREVIEW_PIECE_BYTES) {
        withHead.push(chunk);
        headBytes += chunk.length;
      } else {
        sendHead(false);
        for (let at = 0; at < chunk.length; at += PREVIEW_PIECE_BYTES)
          this.send({ t: "pd", sid: this.open.sid, bytes: bytesOf(chunk.subarray(at, at + PREVIEW_PIECE_BYTES)) });
      }
      if (this.credit <= 0) res.pause(); // the browser reads slower than the app writes: the app waits
    });
    res.on("end", () => {
      if (withHead) {
        sendHead(true);
        this.finish(null, true);
      } else this.finish({ t: "pd", sid: this.open.sid, fin: true, bytes: new Uint8Array(0) }, true);
    });
    res.on("error", (err) => this.fail(unreachable(this.open.port, err)));
  }

  fromWorker(frame: PreviewFrame): void {
    this.idle.touch();
    if (frame.t === "pw") {
      this.credit += frame.n;
      if (this.credit > 0 && this.res?.isPaused()) this.res.resume();
    } else if (frame.t === "pd" && this.req) {
      const length = frame.bytes.length;
      if (length) this.req.write(frame.bytes, () => this.credited(length));
      if (frame.fin) this.req.end();
    } else if (frame.t === "px") {
      this.abort();
    }
  }

  /** Request bytes the app took are credited back in batches, not per piece. */
  private credited(length: number): void {
    this.written += length;
    if (this.written < PREVIEW_WINDOW_BYTES / 4 || this.finished) return;
    this.send({ t: "pw", sid: this.open.sid, n: this.written });
    this.written = 0;
  }

  private fail(problem: ProblemInit): void {
    if (this.finished) return;
    log.debug(`preview of port ${this.open.port} ${this.open.path}: ${problem.detail}`);
    // Before the head, the worker answers with the problem; after it, the response is cut short.
    this.finish({ t: "px", sid: this.open.sid, problem });
  }

  /** The last frame; a response read to its end leaves its connection to the agent's keep-alive pool. */
  private finish(last: SidecarFrame | null, complete = false): void {
    if (this.finished) return;
    this.finished = true;
    this.idle.stop();
    if (last) this.send(last);
    if (!complete) this.req?.destroy();
    this.done();
  }

  abort(): void {
    this.finished = true;
    this.idle.stop();
    this.req?.destroy();
    this.res?.destroy();
    this.done();
  }
}

/** One proxied WebSocket (a dev server's hot-reload socket): messages relayed as they come, each way. */
class SocketStream extends ProxiedStream {
  private ws: WebSocket | null = null;
  private closed = false;

  constructor(...args: ConstructorParameters<typeof ProxiedStream>) {
    super(...args);
    this.connect(0);
  }

  protected idled(): void {
    this.close(1001, "the preview's socket was idle too long");
  }

  private connect(attempt: number, via?: () => Socket): void {
    const { open } = this;
    const host = via ? "127.0.0.1" : LOOPBACKS[attempt] === "::1" ? "[::1]" : LOOPBACKS[attempt];
    const headers: Record<string, string> = {};
    for (const [name, value] of open.headers)
      if (!HOP_BY_HOP.has(name.toLowerCase()) && !name.toLowerCase().startsWith("sec-websocket-")) headers[name] = value;
    let opened = false;
    const ws = new WebSocket(`ws://${host}:${open.port}${open.path}`, open.ws ?? [], {
      headers: { ...headers, host: `localhost:${open.port}` },
      perMessageDeflate: false,
      maxPayload: PREVIEW_MESSAGE_MAX_BYTES,
      ...(via ? { createConnection: via } : {}),
    });
    this.ws = ws;
    ws.on("open", () => {
      opened = true;
      this.send({ t: "ph", sid: open.sid, status: 101, headers: [], ...(ws.protocol ? { protocol: ws.protocol } : {}) });
    });
    ws.on("message", (data, isBinary) => {
      this.idle.touch();
      const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      this.send({ t: "pd", sid: open.sid, ...(isBinary ? {} : { text: true }), bytes: bytesOf(bytes) });
    });
    ws.on("unexpected-response", (_req, res) => {
      res.resume();
      this.end({ code: "stream_error", detail: `the app on port ${open.port} answered the WebSocket upgrade with HTTP ${res.statusCode}` });
    });
    ws.on("error", (err) => {
      const refused = !opened && errnoCode(err) === "ECONNREFUSED";
      if (refused && !via && attempt + 1 < LOOPBACKS.length) return this.connect(attempt + 1);
      if (refused && !via) {
        void this.inside(open.port)
          .catch(() => null)
          .then((inner) => (this.closed ? undefined : inner ? this.connect(0, inner) : this.end(unreachable(open.port, err))));
        return;
      }
      if (!opened) this.end(unreachable(open.port, err));
    });
    ws.on("close", (code, reason) => {
      if (opened) this.end(undefined, code, reason.toString());
    });
  }

  fromWorker(frame: PreviewFrame): void {
    this.idle.touch();
    if (frame.t === "pd" && this.ws?.readyState === WebSocket.OPEN) this.ws.send(frame.text ? Buffer.from(frame.bytes).toString("utf8") : frame.bytes);
    else if (frame.t === "px") this.close(frame.code ?? 1000, frame.reason ?? "");
  }

  private close(code: number, reason: string): void {
    const valid = code === 1000 || (code >= 3000 && code <= 4999);
    try {
      this.ws?.close(valid ? code : 1000, reason.slice(0, 120));
    } catch {
      this.ws?.terminate();
    }
    this.end(undefined, 1001, reason);
  }

  private end(problem?: ProblemInit, code?: number, reason?: string): void {
    if (this.closed) return;
    this.closed = true;
    this.idle.stop();
    const closeCode = code === undefined || code === 1005 || code === 1006 ? 1000 : code;
    this.send({ t: "px", sid: this.open.sid, ...(problem ? { problem } : { code: closeCode, reason: (reason ?? "").slice(0, 120) }) });
    this.done();
  }

  abort(): void {
    this.closed = true;
    this.idle.stop();
    this.ws?.terminate();
    this.done();
  }
}
